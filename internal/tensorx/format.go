package tensorx

import "strconv"

// FormatShape formats a shape as TensorFlow's error messages do: "[2,3]",
// "[]" for a scalar.
func FormatShape(s []int) string {
	b := make([]byte, 0, 16)
	b = append(b, '[')
	for i, d := range s {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, int64(d), 10)
	}
	return string(append(b, ']'))
}
