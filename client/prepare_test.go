package client

import (
	"bufio"
	"encoding/json"
	"net/http"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tether-dev/tether/api"
)

// TestSampleBodySetsEveryField keeps the sample answer whole: a field
// added to Results, or to a type in it, that the sample leaves unset
// would be decoded cold after the service's answer.
func TestSampleBodySetsEveryField(t *testing.T) {
	var res api.Results
	dec := json.NewDecoder(strings.NewReader(sampleBody))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&res); err != nil {
		t.Fatalf("the sample body does not decode: %v", err)
	}
	// Each struct type is held to it once: at its first place, where
	// its decoder is built.
	var unset []string
	seen := map[reflect.Type]bool{}
	var walk func(path string, v reflect.Value)
	walk = func(path string, v reflect.Value) {
		if v.IsZero() {
			unset = append(unset, path)
			return
		}
		switch v.Kind() {
		case reflect.Pointer:
			walk(path, v.Elem())
		case reflect.Slice:
			walk(path+"[0]", v.Index(0))
		case reflect.Struct:
			if v.Type() == reflect.TypeFor[time.Time]() || seen[v.Type()] {
				return
			}
			seen[v.Type()] = true
			for i := range v.NumField() {
				walk(path+"."+v.Type().Field(i).Name, v.Field(i))
			}
		}
	}
	walk("Results", reflect.ValueOf(res))
	if len(unset) > 0 {
		t.Errorf("the sample body leaves unset: %s", strings.Join(unset, ", "))
	}
}

// TestSampleAnswerParses checks that the made-up answer is an HTTP answer
// whose body is the sample whole.
func TestSampleAnswerParses(t *testing.T) {
	answer := sampleHead + strconv.Itoa(len(sampleBody)) + "\r\n\r\n" + sampleBody
	resp, err := http.ReadResponse(bufio.NewReader(strings.NewReader(answer)), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var res api.Results
	if err := json.NewDecoder(resp.Body).Decode(&res); err != nil || len(res.Results) != 1 {
		t.Fatalf("decoded %+v, %v", res, err)
	}
}
