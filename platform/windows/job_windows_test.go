package windows

import (
	"testing"
	"time"
)

// The process holding a kill-on-close job dies by TerminateProcess: every
// process in the job, grandchildren included, dies with it.
func TestJobKillsTreeWhenHolderDies(t *testing.T) {
	dir := tempDir(t)
	c := startChild(t, "job-tree", dir)
	if s := c.line(t); s != "ready" {
		t.Fatalf("helper: %s", s)
	}
	files := waitFiles(t, dir, "sleeper.", 2)
	var refs []Ref
	for name, inJob := range files {
		if inJob != "true" {
			t.Errorf("%s runs outside a job", name)
		}
	}
	for _, pid := range pidsOf(t, files) {
		r, err := RefOf(pid)
		if err != nil {
			t.Fatalf("pid %d: %v", pid, err)
		}
		refs = append(refs, r)
	}
	if err := c.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = c.cmd.Wait()
	waitDead(t, refs, 5*time.Second)
}

// Stop with no graceful request terminates the job and confirms it empty.
func TestJobStop(t *testing.T) {
	dir := tempDir(t)
	job := testJob(t)
	p, err := startHelper(job, "sleeper", dir, "fork")
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	files := waitFiles(t, dir, "sleeper.", 2)
	if n, err := job.Active(); err != nil || n != 2 {
		t.Fatalf("Active: %d %v, want 2", n, err)
	}
	pids, err := job.Pids()
	if err != nil || len(pids) != 2 {
		t.Fatalf("Pids: %v %v", pids, err)
	}
	rep, err := job.Stop(nil, 0, 5*time.Second)
	if err != nil {
		t.Fatalf("Stop: %v", err)
	}
	if !rep.Forced || rep.Killed != 2 {
		t.Errorf("report %+v, want forced with 2 killed", rep)
	}
	if n, _ := job.Active(); n != 0 {
		t.Errorf("%d still active", n)
	}
	select {
	case <-p.Exited():
	case <-time.After(5 * time.Second):
		t.Fatal("leader's exit not reported")
	}
	if code, ok := p.ExitCode(); !ok || code != 1 {
		t.Errorf("exit code %d %v, want 1", code, ok)
	}
	_ = files
}

// A failed graceful request is recorded and the job terminated at once:
// waiting for a request that never arrived would only delay the stop.
func TestJobStopGracefulFailed(t *testing.T) {
	dir := tempDir(t)
	job := testJob(t)
	p, err := startHelper(job, "sleeper", dir)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	waitFiles(t, dir, "sleeper.", 1)
	begin := time.Now()
	rep, err := job.Stop(func() error { return errTest }, time.Minute, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Graceful != errTest || !rep.Forced || rep.Requested != 0 || rep.Killed != 1 {
		t.Errorf("report %+v", rep)
	}
	if d := time.Since(begin); d > 10*time.Second {
		t.Errorf("stop took %v: it waited for a request that failed", d)
	}
}

// A named job can be found by name while it lives, and a second one of
// the same name is refused rather than joined.
func TestJobByName(t *testing.T) {
	name := testMutexName(t) + "-job"
	job, err := NewJob(name)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := NewJob(name); err == nil || !isJobExists(err) {
		t.Fatalf("second NewJob: %v, want ErrJobExists", err)
	}
	other, err := OpenJob(name)
	if err != nil {
		t.Fatalf("OpenJob: %v", err)
	}
	other.Close()
	job.Close()
	if _, err := OpenJob(name); err == nil {
		t.Fatal("OpenJob found a job whose last handle was closed")
	}
}
