//go:build !race

package gemm

// raceDetector is false without the race detector (see race_on_test.go).
const raceDetector = false
