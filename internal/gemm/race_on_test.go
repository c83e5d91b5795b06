//go:build race

package gemm

// raceDetector is true when the tests run under the race detector (-race,
// ten or more times slower): the exhaustive shape sweeps then take a few
// shapes, enough for the detector, which looks for concurrent accesses,
// not for wrong numbers.
const raceDetector = true
