// Package tcpserver holds what the conformance suite reads from the echo backend's TCP server:
// its greeting and the JSON document it answers a TEST line with. The server itself is the
// echo-basic backend the pod runner starts; this package only describes its protocol.
package tcpserver

// WelcomeMessage is the line the server writes when a connection opens.
const WelcomeMessage = "Gateway API Test TCP Server\n"

// Context names the pod that answered.
type Context struct {
	Namespace string `json:"namespace"`
	Ingress   string `json:"ingress"`
	Service   string `json:"service"`
	Pod       string `json:"pod"`
	TCPPort   string `json:"tcpport"`
	TLSPort   string `json:"tlsport,omitempty"`
}

// TLSAssertions describe the TLS session the server saw, when the connection was TLS.
type TLSAssertions struct {
	Version            string `json:"version"`
	ServerName         string `json:"serverName"`
	NegotiatedProtocol string `json:"negotiatedProtocol,omitempty"`
	Curves             string `json:"curves,omitempty"`
	CipherSuite        string `json:"cipherSuite"`
}

// TCPAssertions is the answer to a TEST line: the pod, whether the connection was TLS, and
// the session's details if it was.
type TCPAssertions struct {
	Context      `json:",inline"`
	IsTLS        bool           `json:"isTLS"`
	TLSAssertion *TLSAssertions `json:"tls,omitempty"`
}
