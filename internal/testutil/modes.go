package testutil

// Modes returns the kernel modes to test in a package whose kernels have
// portable Go loops and optional assembly behind a switch that is on when
// the CPU has it: false (the Go loops), and true (the assembly) if enabled.
func Modes(enabled bool) []bool {
	if enabled {
		return []bool{false, true}
	}
	return []bool{false}
}

// WithFlag runs fn with *flag set to v and restores its value afterwards,
// for tests that switch a package's assembly kernels on and off.
func WithFlag(flag *bool, v bool, fn func()) {
	old := *flag
	*flag = v
	defer func() { *flag = old }()
	fn()
}
