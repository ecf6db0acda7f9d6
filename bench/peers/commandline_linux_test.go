//go:build linux

package peers

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// cliStarter is a supervisor whose users also start an agent from its
// command line, besides the path (mostly an API) that the other rows use.
type cliStarter interface {
	// cliStart runs the supervisor's start command for name to its end.
	cliStart(name string) error
}

// measureCLI times startReps command-line starts of the polite agent, in
// a lifetime of their own, as the first-process row does for the other
// path.
func measureCLI(t *testing.T, h *harness, s supervisor, r *results) {
	c, ok := s.(cliStarter)
	if !ok {
		return
	}
	const what = "start from the command line"
	if err := s.setup([]agentSpec{{"polite", "polite", false}}); err != nil {
		r.fail(t, s, what, err)
		return
	}
	if err := s.up(); err != nil {
		r.fail(t, s, what+": start of the supervisor", err)
		return
	}
	defer endLifetime(h, s)
	tag := s.name() + "-polite"
	for range startReps {
		begin, beginMono := time.Now(), monoNow()
		if err := c.cliStart("polite"); err != nil {
			r.fail(t, s, what, err)
			return
		}
		exited := time.Since(begin)
		first, err := waitComplete(begin, tag)
		if err != nil {
			r.fail(t, s, what, err)
			return
		}
		first = h.firstExec(tag, beginMono, first)
		r.cliSpawn = append(r.cliSpawn, first)
		t.Logf("%s: command-line start exited after %.1f ms, first process at %.1f ms", s.name(), ms(exited), ms(first))
		if err := s.stopAgent("polite"); err != nil {
			t.Logf("%s: stop polite answered: %v", s.name(), err)
		}
		killTag(tag)
		h.reapZombies()
		if err := settle(s, "polite"); err != nil {
			r.fail(t, s, what, err)
			return
		}
	}
}

// cliStart runs tether start, which exits once the agent runs.
func (s *tetherSup) cliStart(name string) error {
	cmd := exec.Command(s.exe, "--profile", tetherProfile, "start", name)
	cmd.Env, cmd.Dir = s.env, s.dir
	return s.h.runCmd(cmd)
}

// cliStart runs supervisorctl start, which exits once the program is
// RUNNING (at once: startsecs=0). Its config file names the server.
func (s *supervisordSup) cliStart(name string) error {
	conf := filepath.Join(s.dir, "supervisorctl.conf")
	if _, err := os.Stat(conf); err != nil {
		if err := os.WriteFile(conf, []byte("[supervisorctl]\nserverurl=unix://"+s.sock+"\n"), 0o600); err != nil {
			return err
		}
	}
	return s.h.run("supervisorctl", "-c", conf, "start", name)
}

// cliStart is s6-svc -u, the path of the other rows too: s6 has no other.
func (s *s6Sup) cliStart(name string) error { return s.startAgents(name) }

// drivenBy says how the rows other than the command-line one drive each
// supervisor.
func drivenBy(sups []supervisor) string {
	paths := map[string]string{
		"tether":          "through its API (client.Client on the service's socket)",
		"supervisord":     "through XML-RPC on its unix socket",
		"s6":              "with s6-svc (the client of its control FIFO)",
		"pm2":             "through its programmatic API (pm2.connect, pm2.start of the ecosystem file, pm2.stop)",
		"process-compose": "through its REST API on a unix socket",
	}
	var each []string
	for _, s := range sups {
		each = append(each, s.name()+" "+paths[s.name()])
	}
	return "The rows other than the command-line one reach " + strings.Join(each, "; ") + "."
}
