// Package importcheck holds the test that keeps the module's layering: a
// package may import only packages of the module below it (see Rules in
// importcheck_test.go, and the layout table of the README). It has no
// code of its own.
package importcheck
