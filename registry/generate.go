package registry

// The list of registered ops in the package documentation (ops_doc_gen.go)
// is generated from the registry by cmd/genops.

//go:generate go run ../cmd/genops -doc -o ops_doc_gen.go
