package platform

import (
	"os"
	"strconv"
)

// ManagerSocketEnv is the variable a service manager names its
// notification socket in (systemd's Type=notify).
const ManagerSocketEnv = "NOTIFY_SOCKET"

// ServiceManager is the service manager that started this process and
// listens for its notifications (systemd's $NOTIFY_SOCKET); its zero
// value, for a process started otherwise, notifies no one.
type ServiceManager struct {
	// Socket is the notification socket, "" for none.
	Socket string
}

// TakeServiceManager returns the service manager of this process and
// removes ManagerSocketEnv from its environment, so that no child (an
// agent) takes the manager's socket for its own.
func TakeServiceManager() ServiceManager {
	m := ServiceManager{Socket: os.Getenv(ManagerSocketEnv)}
	os.Unsetenv(ManagerSocketEnv)
	return m
}

// Env is the manager's variable for a process that is to notify it in
// this one's stead (a successor after execve), nil for no manager.
func (m ServiceManager) Env() []string {
	if m.Socket == "" {
		return nil
	}
	return []string{ManagerSocketEnv + "=" + m.Socket}
}

// Notify sends state, newline-separated sd_notify assignments such as
// "READY=1" or "STOPPING=1", to the manager; without one it does nothing.
// On Windows there is never one.
func (m ServiceManager) Notify(state string) error {
	if m.Socket == "" {
		return nil
	}
	return notifyManager(m.Socket, state)
}

// Reloading is the state of a reload beginning: RELOADING=1 with the
// monotonic time systemd asks of it.
func Reloading() string {
	return "RELOADING=1\nMONOTONIC_USEC=" + strconv.FormatInt(monotonic().Microseconds(), 10)
}
