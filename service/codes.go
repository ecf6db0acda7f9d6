package service

import (
	"errors"

	"github.com/tether-dev/tether/api"
	"github.com/tether-dev/tether/guardian"
	"github.com/tether-dev/tether/wire"
)

// startCodes maps the guardian's startup failure codes onto the API's,
// one to one: a lock or private directory that could not be used keeps
// its cause end to end. Only the guardian's internal, and a guardian
// that gave no typed answer, are internal in the API.
var startCodes = map[wire.Code]api.Code{
	wire.CodeContention: api.CodeContention,
	wire.CodeSpawn:      api.CodeSpawn,
	wire.CodeConfig:     api.CodeConfig,
	wire.CodeLock:       api.CodeLock,
	wire.CodePrivateDir: api.CodePrivateDir,
}

// startCode is the API code of a guardian start that failed with err.
func startCode(err error) api.Code {
	if se, ok := errors.AsType[*guardian.StartError](err); ok {
		if code, ok := startCodes[se.Code]; ok {
			return code
		}
	}
	return api.CodeInternal
}

// startMessage is the message of the row of an agent whose start failed
// with err: the guardian's reason alone, for the row names the agent and
// its code already.
func startMessage(err error) string {
	if se, ok := errors.AsType[*guardian.StartError](err); ok {
		return se.Reason()
	}
	return err.Error()
}

// checkCodes maps the stop reasons of a readiness, watchdog or health
// check onto the API's codes.
var checkCodes = map[wire.StopReason]api.Code{
	wire.ReasonNotReady:  api.CodeNotReady,
	wire.ReasonWatchdog:  api.CodeWatchdog,
	wire.ReasonUnhealthy: api.CodeUnhealthy,
}

// cleanupError is the API's error for a cleanup that failed with err,
// prefixed by what was being done (empty: nothing): the guardian's
// message, and the processes it left alive as a list of their own.
func cleanupError(doing string, err error) *api.Error {
	e := &api.Error{Code: api.CodeCleanupFailed, Message: doing + err.Error()}
	if ce, ok := errors.AsType[*guardian.CleanupError](err); ok {
		for _, p := range ce.Survivors {
			e.Left = append(e.Left, api.Process{PID: p.PID, State: p.State})
		}
	}
	return e
}
