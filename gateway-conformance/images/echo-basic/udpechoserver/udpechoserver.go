// Package udpechoserver holds what the conformance suite reads from the echo backend's UDP
// server: every datagram is answered with one JSON document naming the pod. The server itself
// is the echo-basic backend the pod runner starts.
package udpechoserver

// Context names the pod that answered.
type Context struct {
	Namespace string `json:"namespace"`
	Ingress   string `json:"ingress"`
	Service   string `json:"service"`
	Pod       string `json:"pod"`
}

// EchoResponse is the answer to one datagram: the datagram as received, and the pod.
type EchoResponse struct {
	Request string `json:"request"`
	Context `json:",inline"`
}
