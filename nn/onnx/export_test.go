package onnx

// SetNoClipForTest drops (true) or restores the Clip before QuantizeLinear
// on grids narrower than uint8, and returns the previous setting.
func SetNoClipForTest(v bool) bool {
	old := noClipForTest
	noClipForTest = v
	return old
}
