module sigs.k8s.io/gateway-api-conformance-images

go 1.24.0

require (
	google.golang.org/grpc v1.84.0
	google.golang.org/protobuf v1.36.12
)
