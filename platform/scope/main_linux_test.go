package scope

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/tether-dev/tether/internal/testproc"
	punix "github.com/tether-dev/tether/platform/unix"
)

// waitLimit bounds every wait for a bus, a manager or a helper.
const waitLimit = 10 * time.Second

func init() {
	testproc.Register("enter-scope", enterScope)
}

func TestMain(m *testing.M) {
	testproc.Main(m, testproc.Sweep(), testproc.NoLeaks(), testproc.EveryHelperUsed())
}

// enterScope, a helper, enters the scope unit args[0] of the user manager
// on the session bus of its environment and prints the cgroup it is in
// then, the one punix.NewCgroup makes below it, and how long that took.
func enterScope(args []string) int {
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	begin := time.Now()
	if err := Enter(ctx, SessionBusAddress(os.LookupEnv), args[0], "tether platform test"); err != nil {
		fmt.Println("error", err)
		return 1
	}
	own, err := punix.OwnCgroupDir()
	if err != nil {
		fmt.Println("error", err)
		return 1
	}
	cg, err := punix.NewCgroup("child")
	if err != nil {
		fmt.Println("error", err)
		return 1
	}
	took := time.Since(begin)
	fmt.Println(own)
	fmt.Println(cg.Path)
	fmt.Println(took)
	if err := cg.Remove(); err != nil {
		fmt.Println("error", err)
		return 1
	}
	return 0
}
