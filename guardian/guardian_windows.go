package guardian

import (
	"fmt"
	"os"
)

// Main reports that the Windows guardian (named mutex, job object, named
// pipe tether) is not part of this build yet.
func Main(args []string) int {
	fmt.Fprintln(os.Stderr, "tether guardian:", ErrUnsupported)
	return 1
}
