package client

import (
	"bufio"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"sync"

	"github.com/tether-dev/tether/api"
)

// prepareAnswer reads a made-up answer to an action once per process, the
// first time the process asks for one, on a goroutine of its own while
// the service works: encoding/json builds a type's decoder on its first
// decode, and net/http and the decoders' code are paged in on first use.
// A command line pays for all of it once, and without this it paid after
// the service's answer had come: about 0.3 ms of "tether start" between
// the agent's READY=1 and the command's return. An action's answer comes
// only once the agents are up or down, so the work is done by then.
var prepareAnswer = sync.OnceFunc(func() { go readSampleAnswer() })

func readSampleAnswer() {
	answer := sampleHead + strconv.Itoa(len(sampleBody)) + "\r\n\r\n" + sampleBody
	resp, err := http.ReadResponse(bufio.NewReader(strings.NewReader(answer)), nil)
	if err != nil {
		return
	}
	var res api.Results
	_ = json.NewDecoder(resp.Body).Decode(&res)
}

// sampleHead is the head of an answer as the service writes it, up to its
// length.
const sampleHead = "HTTP/1.1 200 OK\r\n" +
	"Content-Type: application/json\r\n" +
	"Date: Tue, 01 Dec 2026 12:00:00 GMT\r\n" +
	"Connection: close\r\n" +
	"Content-Length: "

// sampleBody sets every field of Results, nested ones included, so that
// its decode builds the decoder of every type in it
// (TestSampleBodySetsEveryField holds it to that).
const sampleBody = `{"results":[{"id":"a","agent":{"id":"a","identity":"a","state":"running",` +
	`"enabled":true,"pid":2,"guardian_pid":1,"since":"2026-12-01T12:00:00.000000001Z","restarts":1,` +
	`"error":{"code":"crash_loop","message":"m","left":[{"pid":3,"state":"D"}],"last":{"code":"exit","message":"m"}},` +
	`"status":"s","intent_error":{"code":"state","message":"m"},"containment":"cgroup",` +
	`"usage":{"cpu_seconds":0.5,"memory_bytes":1,"procs":1,"source":"cgroup"}},` +
	`"error":{"code":"internal","message":"m"}}]}`
