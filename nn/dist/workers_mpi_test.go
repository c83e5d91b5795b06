//go:build mpi

package dist_test

import (
	"errors"
	"fmt"
	"strings"

	"github.com/tapegrad/tapegrad/nn/dist"
)

func init() {
	// An error of the MPI library comes back as a *dist.Error (the
	// communicator's error handler is MPI_ERRORS_RETURN), and the
	// communicator still works.
	workers["mpi-error"] = func(c dist.Comm) error {
		err := dist.BcastUnchecked(c, []byte{1, 2}, c.Size()+3)
		var me *dist.Error
		if !errors.As(err, &me) || me.Call != "MPI_Bcast" || me.Code == 0 || me.Msg == "" || !strings.Contains(err.Error(), "MPI_Bcast failed") {
			return agree(c, fmt.Errorf("MPI_Bcast from an invalid root: %v, want a *dist.Error", err))
		}
		return agree(c, commChecks(c))
	}
}
