package windows

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"testing"
	"time"

	"github.com/tether-dev/tether/internal/testproc"
)

// burnBytes is the memory each "burner" helper holds.
const burnBytes = 64 << 20

// TestUsageOfJob: a job of two burners, each holding 64 MiB and burning
// a CPU, is measured by its accounting: its CPU time, its processes'
// working sets and how many run; once closed (its processes killed), the
// job is gone.
func TestUsageOfJob(t *testing.T) {
	dir := tempDir(t)
	name := fmt.Sprintf(`Local\tether-test-usage-%d-%d`, os.Getpid(), time.Now().UnixNano())
	job, err := NewJob(name)
	if err != nil {
		t.Fatal(err)
	}
	closed := false
	t.Cleanup(func() {
		if !closed {
			job.Close()
		}
	})
	began := time.Now()
	p, err := startHelper(job, "burner", dir, "fork")
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	waitFiles(t, dir, "burner.", 2)
	// Wine keeps no CPU time in a job's accounting (it reads 0): there
	// only the other figures can be checked.
	wantCPU := 300 * time.Millisecond
	if underWine() {
		wantCPU = 0
	}
	var u JobUsage
	if !testproc.UntilEvery(20*time.Second, 20*time.Millisecond, func() bool {
		if u, err = UsageOfJob(name); err != nil {
			t.Fatal(err)
		}
		return u.CPU >= wantCPU && u.Active == 2 && u.Memory >= 2*burnBytes
	}) {
		t.Fatalf("the job's usage never showed its two burners (CPU over %v, 2 active, %d MiB): %+v", wantCPU, 2*burnBytes>>20, u)
	}
	if limit := time.Since(began) * time.Duration(runtime.NumCPU()); u.CPU > limit {
		t.Errorf("CPU %v: more than the %v the machine's CPUs had", u.CPU, limit)
	}
	if u.Memory > 2*burnBytes+512<<20 {
		t.Errorf("Memory = %d MiB, want the burners' %d MiB and less than 512 MiB more", u.Memory>>20, 2*burnBytes>>20)
	}
	t.Logf("job: %v CPU, %d MiB, %d processes", u.CPU, u.Memory>>20, u.Active)
	job.Close()
	closed = true
	select {
	case <-p.Exited():
	case <-time.After(10 * time.Second):
		t.Fatal("the job's processes outlived its close")
	}
	// The job lives on while a handle to it, or to one of its processes
	// (on Wine), is open, or a process of it runs.
	p.Close()
	if !testproc.UntilEvery(10*time.Second, 10*time.Millisecond, func() bool {
		u, err = UsageOfJob(name)
		return errors.Is(err, os.ErrNotExist)
	}) {
		t.Fatalf("UsageOfJob of a closed job: %+v, %v; want an error matching os.ErrNotExist", u, err)
	}
}
