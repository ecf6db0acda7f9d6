package main

import (
	"fmt"

	"github.com/tether-dev/tether/internal/buildinfo"
)

func main() {
	i := buildinfo.Get()
	fmt.Println(i.Version, i.Commit, i.Date)
}
