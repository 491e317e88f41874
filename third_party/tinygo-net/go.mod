// TinyGo's net package: github.com/tinygo-org/net at commit
// 983d88dd7a8f73e888c6bf4b9eda3a6bd67b945d (TinyGo 0.39.0's src/net
// submodule), without its tests. scripts/tinygo.sh copies it into TinyGo's
// src/net. This go.mod only keeps it out of redrive's ./... (it is not
// standard Go's net).
module tinygo-net

go 1.22
