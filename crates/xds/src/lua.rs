//! Cookie rewriting through Lua (`envoy.filters.http.lua`), as upstream does it: every HTTP
//! listener carries one fixed script, run only where a route (or one of its weighted clusters)
//! names it. The rules travel as the script's filter context, typed data, never as code.

use envoy_types::pb::envoy::config::core::v3::{DataSource, data_source};
use envoy_types::pb::envoy::extensions::filters::http::lua::v3::Lua;
use envoy_types::pb::envoy::extensions::filters::network::http_connection_manager::v3::HttpFilter;
use envoy_types::pb::google::protobuf::{Any, value};
use envoy_types::util::pack_any;
use prost::Message;

use crate::ordered::{OrderedStruct, OrderedStructOfStructs};

/// The filter's name, which per-filter configuration is keyed by.
pub(crate) const NAME: &str = "envoy.filters.http.lua";

/// The script's name among the filter's sources (upstream's).
const COOKIE_REWRITE: &str = "cookie_rewrite.lua";

/// Rewrites attributes of the `Set-Cookie` answers of the cookies named in the filter context
/// (cookie name -> `path`, `domain`, `secure`, `same_site`; Envoy hands the context over as a
/// map whose `get` returns a cookie's rules as a table). Attributes keep their order; a
/// rewritten one keeps its place, a new one is appended.
const COOKIE_REWRITE_SCRIPT: &str = r#"
local function rewrite(line, rules)
  local name, rest = line:match("^%s*([^=;]-)%s*=(.*)$")
  if name == nil then return line end
  local rule = rules:get(name)
  if type(rule) ~= "table" then return line end
  local value, attributes = rest:match("^([^;]*)(.*)$")
  local out = { name .. "=" .. value }
  local seen = {}
  for attribute in attributes:gmatch("[^;]+") do
    attribute = attribute:match("^%s*(.-)%s*$")
    if attribute ~= "" then
      local key = attribute:match("^([^=]*)"):match("^(.-)%s*$"):lower()
      seen[key] = true
      if key == "path" and rule.path ~= nil then
        attribute = "Path=" .. rule.path
      elseif key == "domain" and rule.domain ~= nil then
        attribute = "Domain=" .. rule.domain
      elseif key == "samesite" and rule.same_site ~= nil then
        attribute = "SameSite=" .. rule.same_site
      elseif key == "secure" and rule.secure == false then
        attribute = nil
      end
      if attribute ~= nil then table.insert(out, attribute) end
    end
  end
  if rule.path ~= nil and not seen["path"] then table.insert(out, "Path=" .. rule.path) end
  if rule.domain ~= nil and not seen["domain"] then table.insert(out, "Domain=" .. rule.domain) end
  if rule.secure == true and not seen["secure"] then table.insert(out, "Secure") end
  if rule.same_site ~= nil and not seen["samesite"] then table.insert(out, "SameSite=" .. rule.same_site) end
  return table.concat(out, "; ")
end

function envoy_on_response(response_handle)
  local rules = response_handle:filterContext()
  local headers = response_handle:headers()
  if headers:get("set-cookie") == nil then return end
  local cookies = {}
  for key, value in pairs(headers) do
    if key == "set-cookie" then table.insert(cookies, rewrite(value, rules)) end
  end
  headers:remove("set-cookie")
  for _, cookie in ipairs(cookies) do headers:add("set-cookie", cookie) end
end
"#;

/// The listener's filter: the script, run by no route until one names it.
pub(crate) fn filter() -> HttpFilter {
    let source = DataSource {
        specifier: Some(data_source::Specifier::InlineString(COOKIE_REWRITE_SCRIPT.into())),
        ..Default::default()
    };
    // One source: a one-entry map encodes the same in every process.
    let lua = Lua { source_codes: [(COOKIE_REWRITE.to_string(), source)].into_iter().collect(), ..Default::default() };
    crate::http_filter(NAME, pack_any(lua))
}

/// `LuaPerRoute` naming a source, with a filter context whose entries keep their order.
#[derive(Clone, PartialEq, Message)]
struct LuaPerRouteByName {
    /// `LuaPerRoute.name` (one of the `override` choices).
    #[prost(string, tag = "2")]
    name: String,
    /// `LuaPerRoute.filter_context`.
    #[prost(message, optional, tag = "4")]
    filter_context: Option<OrderedStructOfStructs>,
}

/// The per-route configuration running the cookie script with these rules; `None` without rules.
pub(crate) fn cookie_rewrites(rules: &[ir::CookieRewrite]) -> Option<Any> {
    if rules.is_empty() {
        return None;
    }
    let text = |s: &String| value::Kind::StringValue(s.clone());
    let context = OrderedStructOfStructs::new(rules.iter().map(|rule| {
        let attributes = [
            rule.path.as_ref().map(|p| ("path".to_string(), text(p))),
            rule.domain.as_ref().map(|d| ("domain".to_string(), text(d))),
            rule.secure.map(|s| ("secure".to_string(), value::Kind::BoolValue(s))),
            rule.same_site.as_ref().map(|s| ("same_site".to_string(), text(s))),
        ];
        (rule.name.clone(), OrderedStruct::new(attributes.into_iter().flatten()))
    }));
    let config = LuaPerRouteByName { name: COOKIE_REWRITE.into(), filter_context: Some(context) };
    Some(Any {
        type_url: "type.googleapis.com/envoy.extensions.filters.http.lua.v3.LuaPerRoute".into(),
        value: config.encode_to_vec(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use envoy_types::pb::envoy::extensions::filters::http::lua::v3::{LuaPerRoute, lua_per_route};

    #[test]
    fn the_rules_decode_as_envoy_reads_them() {
        let rule = ir::CookieRewrite {
            name: "session".into(),
            path: Some("/app".into()),
            domain: None,
            secure: Some(true),
            same_site: Some("Strict".into()),
        };
        let any = cookie_rewrites(&[rule]).unwrap();
        let decoded = LuaPerRoute::decode(any.value.as_slice()).unwrap();
        assert_eq!(decoded.r#override, Some(lua_per_route::Override::Name(COOKIE_REWRITE.into())));
        let context = decoded.filter_context.unwrap();
        let Some(value::Kind::StructValue(session)) = &context.fields["session"].kind else { panic!("{context:?}") };
        assert_eq!(session.fields["path"].kind, Some(value::Kind::StringValue("/app".into())));
        assert_eq!(session.fields["secure"].kind, Some(value::Kind::BoolValue(true)));
        assert_eq!(session.fields["same_site"].kind, Some(value::Kind::StringValue("Strict".into())));
        assert!(!session.fields.contains_key("domain"));
        assert_eq!(cookie_rewrites(&[]), None);
    }
}
