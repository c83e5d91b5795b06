// Package autodiff is tapegrad's tape: it records the ops a program applies
// to its values and computes gradients by replaying the record in reverse,
// to any order.
//
// A Tape is explicit (no global state). Constants, watched leaves and
// bound parameters enter it; ops (typed functions such as MatMul and Relu,
// or Tape.Apply for any registered op) produce new values; Backward adds
// the gradient of a loss into the parameters' Grad, and Grad returns
// gradients as values, recording the backward pass when asked so that
// gradients of gradients work.
//
// Errors are sticky, as in bufio.Writer: the first error of a tape (an
// *OpError naming the op, the input, the phase and the caller's file:line)
// makes later ops no-ops, and is returned by Backward, Grad, Err and every
// read of data.
//
// # Debugging: NaN and Inf
//
// A tape made with DetectAnomaly checks every op's float outputs, forward
// and backward, and fails at the first op that makes a NaN or an infinity,
// naming it, the phase ("forward" or "gradient of <op>") and the user's
// file:line (see DetectAnomaly, AnomalyError). Off by default.
//
// # Debugging: poisoned buffers
//
// A tape recycles its buffers between steps. With the environment variable
// TAPEGRAD_POISON=1 (PoisonEnv; read once, when a tape first allocates),
// every buffer handed to a kernel without zeroing is first filled with NaN
// (floats) or a sentinel (integers), so a kernel, yours or ours, that reads
// output it has not written gives NaN instead of stale values. Off by
// default (it costs a pass over each such buffer); tapegrad's own tests
// switch it on, and a custom op's tests can too, in TestMain:
//
//	func TestMain(m *testing.M) {
//		os.Setenv(autodiff.PoisonEnv, "1")
//		os.Exit(m.Run())
//	}
package autodiff

import _ "github.com/tapegrad/tapegrad/backward" // registers every standard gradient
