module github.com/tether-dev/tether

go 1.26.0

require (
	fyne.io/systray v1.12.2
	git.sr.ht/~jackmordaunt/go-toast v1.1.2
	github.com/Microsoft/go-winio v0.6.4
	github.com/esiqveland/notify v0.13.3
	github.com/gen2brain/beeep v0.12.0
	github.com/godbus/dbus/v5 v5.2.4
	github.com/kardianos/service v1.2.4
	go.uber.org/goleak v1.3.0
	golang.org/x/sys v0.50.0
	gopkg.in/yaml.v3 v3.0.1
)

require (
	github.com/ebitengine/purego v0.10.2 // indirect
	github.com/go-ole/go-ole v1.3.0 // indirect
	github.com/kr/text v0.2.0 // indirect
	github.com/sergeymakinen/go-bmp v1.0.0 // indirect
	github.com/sergeymakinen/go-ico v1.0.0-beta.0 // indirect
	github.com/tadvi/systray v0.0.0-20190226123456-11a2b8fa57af // indirect
)
