// Package service will hold the per-user service: config, durable intent,
// the local API server and OS registration. It owns agents only through
// guardian sessions. Not built yet: "tether service" says so.
package service
