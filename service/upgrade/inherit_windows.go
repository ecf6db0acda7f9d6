//go:build windows

package upgrade

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/tether-dev/tether/guardian"
	"github.com/tether-dev/tether/platform"
	pwin "github.com/tether-dev/tether/platform/windows"
	"golang.org/x/sys/windows"
)

// On Windows the successor is another process. This one starts it,
// waiting on its standard input for the go-ahead; duplicates into it the
// service lock, the pipe's listening instances and every tether; writes
// the record and says go. The successor reads the record and says
// "prepared" on its report pipe: from then on it reads the tethers, and
// there is no way back. It serves, sends attach to every guardian (each
// watches its owner's process handle, and takes the successor's), and
// says "taken over" once every guardian has answered; this process exits
// then. Before "prepared", a successor that fails, exits or stays silent
// is killed and this process goes on; a kill of this process before the
// go-ahead ends the successor too (its input closes).
const Separate = true

// AttachLater: the successor tells every guardian at once, since this
// process exits only once they all watch the successor.
const AttachLater = false

// handoverReportEnv names the successor's report pipe: the value of the
// handle it inherits.
const handoverReportEnv = "TETHER_HANDOVER_REPORT"

// Bounds of the exchange with the successor.
const (
	preparedTimeout = 30 * time.Second
	takeoverWait    = 30 * time.Second
	lockRetake      = 30 * time.Second
)

// inheritance is the service lock, and in a successor its end of the
// report pipe.
type inheritance struct {
	lock *os.File
	// report is the successor's end of its report pipe.
	report *os.File
}

// New is the inheritance of a service that holds lock.
func New(lock *os.File) Inheritance { return &inheritance{lock: lock} }

func (in *inheritance) Lock() *os.File { return in.lock }

// TakeOver starts target as the successor and hands everything over; on
// success it exits this process. It returns only when the successor did
// not take over, with this process as it was.
func (in *inheritance) TakeOver(target string, listener net.Listener, rec *Record, extraEnv []string, path string) (err error) {
	pl, ok := listener.(*pwin.PipeListener)
	if !ok {
		return errors.New("the API listener is not a pipe listener that can be handed over")
	}
	reportR, reportW, err := os.Pipe()
	if err != nil {
		return err
	}
	defer reportR.Close()
	goR, goW, err := os.Pipe()
	if err != nil {
		reportW.Close()
		return err
	}
	defer goW.Close()
	env := slices.DeleteFunc(os.Environ(), func(kv string) bool {
		return strings.HasPrefix(kv, Env+"=") || strings.HasPrefix(kv, handoverReportEnv+"=")
	})
	env = append(env, Env+"="+path, handoverReportEnv+"="+strconv.FormatUint(uint64(reportW.Fd()), 10))
	cmd := exec.Command(target, os.Args[1:]...)
	cmd.Env = append(env, extraEnv...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = goR, os.Stdout, os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{
		AdditionalInheritedHandles: []syscall.Handle{syscall.Handle(reportW.Fd())},
		CreationFlags:              windows.CREATE_NEW_PROCESS_GROUP,
	}
	err = cmd.Start()
	goR.Close()
	reportW.Close()
	if err != nil {
		return fmt.Errorf("starting %s: %w", target, err)
	}
	handedOver := false
	defer func() {
		if err != nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			os.Remove(path)
			if handedOver {
				if uerr := pl.Undo(); uerr != nil {
					err = errors.Join(err, fmt.Errorf("listening again: %w", uerr))
				}
			}
		}
	}()
	to, err := pwin.OpenForHandover(cmd.Process.Pid)
	if err != nil {
		return err
	}
	defer windows.CloseHandle(to)
	if rec.Lock, err = pwin.DuplicateInto(to, in.lock.Fd()); err != nil {
		return fmt.Errorf("the service lock: %w", err)
	}
	if rec.Listener, err = pl.Handover(to); err != nil {
		return err
	}
	handedOver = true
	if err := eachTether(rec, func(h uintptr) (uintptr, error) { return pwin.DuplicateInto(to, h) }); err != nil {
		return err
	}
	StopAt(StepRecorded)
	rec.Steps = Steps()
	b, err := encode(rec)
	if err != nil {
		return err
	}
	if err := writeRecordFile(path, b); err != nil {
		return err
	}
	StopAt(StepExec)
	if _, err := goW.Write([]byte("go\n")); err != nil {
		return fmt.Errorf("telling %s to take over: %w", target, err)
	}
	lines := make(chan string, 2)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(reportR)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	if err := expect(lines, "prepared", preparedTimeout); err != nil {
		return fmt.Errorf("the successor (pid %d) did not take over: %w", cmd.Process.Pid, err)
	}
	// No way back: the successor reads the tethers now. This process
	// stays until every guardian watches the successor instead.
	werr := expect(lines, "taken over", takeoverWait)
	if werr != nil {
		fmt.Fprintf(os.Stderr, "tether service: the successor (pid %d) took over, then %v; the guardians it had not told yet go down with this process\n", cmd.Process.Pid, werr)
	}
	_ = cmd.Process.Release()
	os.Exit(0)
	return nil
}

// expect waits for the line want, up to within.
func expect(lines <-chan string, want string, within time.Duration) error {
	select {
	case l, ok := <-lines:
		switch {
		case !ok:
			return errors.New("it exited, or closed its report")
		case l != want:
			return fmt.Errorf("it said %q, not %q", l, want)
		}
		return nil
	case <-time.After(within):
		return fmt.Errorf("it said nothing within %v", within)
	}
}

// Await waits for the service before to say go: it writes the record
// after this process starts. Its death before that closes this process's
// input, and this process exits.
func Await() error {
	line, err := bufio.NewReader(os.Stdin).ReadString('\n')
	if err != nil || strings.TrimSpace(line) != "go" {
		return fmt.Errorf("%w: the service before never said go (%q, %v)", ErrRecord, line, err)
	}
	return nil
}

// Inherited takes the handles the record names, duplicated into this
// process by the service before; it returns the API's pipe listener,
// on socket, apart.
func Inherited(rec *Record, socket string) (Inheritance, net.Listener, error) {
	v, err := strconv.ParseUint(os.Getenv(handoverReportEnv), 10, 64)
	os.Unsetenv(handoverReportEnv)
	if err != nil || v == 0 {
		return nil, nil, fmt.Errorf("%w: no report handle (%s)", ErrRecord, handoverReportEnv)
	}
	report := os.NewFile(uintptr(v), "report")
	l, err := pwin.AdoptPipeListener(socket, rec.Listener)
	if err != nil {
		report.Close()
		return nil, nil, fmt.Errorf("the API's pipe handed over: %w", err)
	}
	return &inheritance{lock: os.NewFile(rec.Lock, "service.lock"), report: report}, l, nil
}

// Prepared tells the service before that this one takes over from now.
func (in *inheritance) Prepared() error {
	if _, err := io.WriteString(in.report, "prepared\n"); err != nil {
		return fmt.Errorf("telling the service before: %w", err)
	}
	return nil
}

// Served does nothing: the service before, another process, closes what
// it held itself.
func (in *inheritance) Served() {}

// Recall: no stand-in answers on Windows.
func (in *inheritance) Recall() ([]net.Conn, error) { return nil, nil }

// TookOver waits until every guardian has answered attach (and so
// watches this process), tells the service before, which exits, and
// takes the service lock, which Windows releases with its old holder.
func (in *inheritance) TookOver(sessions []*guardian.Session, logf func(string, ...any)) {
	deadline := time.After(takeoverWait)
	for _, s := range sessions {
		select {
		case <-s.Attached():
		case <-deadline:
			logf("some guardians did not answer attach within %v", takeoverWait)
		}
	}
	_, _ = io.WriteString(in.report, "taken over\n")
	in.report.Close()
	go func() {
		end := time.Now().Add(lockRetake)
		for {
			err := platform.TryLock(in.lock)
			if err == nil {
				return
			}
			if !errors.Is(err, platform.ErrLocked) || time.Now().After(end) {
				logf("the service lock could not be taken again after the upgrade: %v", err)
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
	}()
}

// ClaimGuardian: a guardian is no child of the successor on Windows.
func ClaimGuardian(*Tether) {}

// Attachment is the tether t, duplicated into this process; its guardian
// is not this process's child, and is watched.
func Attachment(id string, t *Tether) (guardian.Attachment, error) {
	conn, err := pwin.InheritedFile(t.Conn, "tether-"+id)
	if err != nil {
		return guardian.Attachment{}, err
	}
	return guardian.Attachment{Conn: conn, Proc: guardian.WatchedProcess(t.Guardian), Version: t.Version,
		Ready: t.Ready, Pending: t.Pending, Owner: platform.Self()}, nil
}

// readRecord reads the record file at path and removes it.
func readRecord(path string) ([]byte, error) {
	b, err := os.ReadFile(path)
	if err == nil {
		_ = os.Remove(path)
	}
	return b, err
}
