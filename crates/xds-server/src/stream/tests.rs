//! The stream's state machine and its walks over resource maps.

use super::walks::{added, difference};
use super::*;

fn map(entries: &[(&str, &str)]) -> Resources {
    entries
        .iter()
        .map(|(n, v)| {
            let r = Resource { name: (*n).into(), version: (*v).into(), body: Default::default() };
            (Arc::clone(&r.name), r)
        })
        .collect()
}

#[test]
fn added_names_are_those_only_the_new_map_has() {
    let old = map(&[("b", "1"), ("d", "1")]);
    let new = map(&[("a", "1"), ("b", "2"), ("c", "1"), ("e", "1")]);
    assert_eq!(added(&old, &new).collect::<Vec<_>>(), ["a", "c", "e"]);
    assert_eq!(added(&new, &old).collect::<Vec<_>>(), ["d"]);
    assert_eq!(added(&old, &old).count(), 0);
}

#[test]
fn the_difference_is_what_changed_and_what_went_away() {
    let sent = map(&[("a", "1"), ("b", "1"), ("c", "1"), ("f", "1")]);
    let want = map(&[("b", "2"), ("c", "1"), ("d", "1"), ("e", "1")]);
    let forced = BTreeSet::from([Arc::from("c")]);
    let (changed, removed) = difference(&sent, &want, &forced);
    let names: Vec<&str> = changed.iter().map(|r| &*r.name).collect();
    assert_eq!(names, ["b", "c", "d", "e"]);
    assert_eq!(removed, [Arc::from("a"), Arc::from("f")]);
    let (changed, removed) = difference(&sent, &sent, &BTreeSet::new());
    assert!(changed.is_empty() && removed.is_empty());
}

/// Served map changes (a version, or `None` for gone), names subscribed, names unsubscribed.
type Step<'a> = (Vec<(&'a str, Option<&'a str>)>, Vec<&'a str>, Vec<&'a str>);

#[test]
fn a_patched_want_equals_one_computed_afresh() {
    let eds = ResourceType::Endpoint;
    let fleet = |m: &Resources| FleetResources { by_type: BTreeMap::from([(eds, Arc::new(m.clone()))]) };
    let request = |subscribe: &[&str], unsubscribe: &[&str]| Incoming {
        type_url: eds.type_url().into(),
        subscribe: subscribe.iter().map(|s| s.to_string()).collect(),
        unsubscribe: unsubscribe.iter().map(|s| s.to_string()).collect(),
        ..Default::default()
    };
    let mut stream = StreamState::new(Mode::Delta, None, Duration::from_secs(5));
    let names: Vec<String> = (0..300).map(|i| format!("c{i:03}")).collect();
    let mut served = map(&names.iter().map(|n| (n.as_str(), "1")).collect::<Vec<_>>());
    let every: Vec<&str> = names.iter().map(String::as_str).collect();
    stream.on_request(&request(&every, &[])).unwrap();
    // Each step changes the served map, the subscription, or both; each answer must equal
    // the one a new stream with the same subscription computes.
    let steps: Vec<Step> = vec![
        (vec![], vec![], vec![]),
        (vec![("c999", Some("1"))], vec![], vec![]),
        (vec![], vec!["c999"], vec![]),
        (vec![("c100", Some("2")), ("c200", None)], vec![], vec!["c050", "c060"]),
        (vec![("c050", Some("3"))], vec!["c060", "absent"], vec!["c999"]),
        (vec![("c999", None), ("c998", Some("1"))], vec!["c998", "c050"], vec![]),
    ];
    for (i, (changes, subscribe, unsubscribe)) in steps.into_iter().enumerate() {
        for (name, version) in changes {
            match version {
                Some(v) => {
                    let r = Resource { name: name.into(), version: v.into(), body: Default::default() };
                    served.insert(Arc::clone(&r.name), r);
                }
                None => {
                    served.remove(name);
                }
            }
        }
        stream.on_request(&request(&subscribe, &unsubscribe)).unwrap();
        let f = fleet(&served);
        let want = stream.want(eds, &f);
        let mut fresh = StreamState::new(Mode::Delta, None, Duration::from_secs(5));
        let names: Vec<&str> = stream.types[&eds].names.iter().map(String::as_str).collect();
        fresh.on_request(&request(&names, &[])).unwrap();
        let expected = fresh.want(eds, &f);
        assert_eq!(*want, *expected, "step {i}");
        let all = served.keys().all(|n| stream.types[&eds].names.contains(&**n));
        assert_eq!(
            Arc::ptr_eq(&want, f.shared(eds).unwrap()),
            all,
            "step {i}: the served map itself when all is wanted"
        );
        assert_eq!(
            stream.types[&eds].names_log.as_ref().map(Vec::len),
            Some(0),
            "step {i}: patched, then logged afresh"
        );
    }
}

#[test]
fn a_stream_subscribed_to_every_load_assignment_wants_the_served_map_itself() {
    let fleet =
        |versions| FleetResources { by_type: BTreeMap::from([(ResourceType::Endpoint, Arc::new(map(versions)))]) };
    let mut stream = StreamState::new(Mode::Delta, None, Duration::from_secs(5));
    let eds = ResourceType::Endpoint.type_url();
    let names = vec!["a".to_string(), "b".to_string(), "c".to_string()];
    stream.on_request(&Incoming { type_url: eds.into(), subscribe: names, ..Default::default() }).unwrap();
    let before = fleet(&[("a", "1"), ("b", "1"), ("c", "1")]);
    let out = stream.pump(&before, Instant::now());
    assert_eq!(out.iter().map(|o| o.resources.len()).sum::<usize>(), 3);
    let generation = stream.types[&ResourceType::Endpoint].names_generation;
    for o in out {
        let ack = Incoming { type_url: eds.into(), nonce: o.nonce, ..Default::default() };
        stream.on_request(&ack).unwrap();
    }
    // An ACK subscribes to nothing new: what the stream wants stays cached.
    assert_eq!(stream.types[&ResourceType::Endpoint].names_generation, generation);
    let after = fleet(&[("a", "1"), ("b", "2"), ("c", "1")]);
    let want = stream.want(ResourceType::Endpoint, &after);
    assert!(Arc::ptr_eq(&want, after.shared(ResourceType::Endpoint).unwrap()));
    let out = stream.pump(&after, Instant::now());
    let sent: Vec<&str> = out.iter().flat_map(|o| o.resources.iter().map(|r| &*r.name)).collect();
    assert_eq!(sent, ["b"]);
}
