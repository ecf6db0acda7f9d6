module github.com/tether-dev/tether

go 1.26.0

require (
	github.com/kardianos/service v1.2.4 // indirect
	go.uber.org/goleak v1.3.0 // indirect
	golang.org/x/sys v0.50.0 // indirect
	gopkg.in/yaml.v3 v3.0.1 // indirect
)
