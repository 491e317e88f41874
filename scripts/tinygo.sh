#!/usr/bin/env bash
# TinyGo toolchain for redrive, built from what the package registries serve.
#
#   scripts/tinygo.sh setup        install it under .tinygo/ (idempotent; `make tinygo`)
#   scripts/tinygo.sh build OUT    set it up when missing, then build the worker's wasm (`make build`)
#   scripts/tinygo.sh env          print the environment the build runs with
#
# The pieces, and where each comes from:
# - TinyGo v0.39.0's source (compiler, its src/ and targets/): the Go module
#   proxy. Its git submodules are not in the module zip.
# - LLVM 19 (libclang, llvm-config), clang-19 and wasm-ld-19: Debian. TinyGo is
#   built against them with `-tags llvm19` and calls clang/wasm-ld as programs.
# - libc: Debian's prebuilt wasi-libc (/usr/lib/wasm32-wasi/libc.a), and the
#   compiler runtime: Debian's libclang_rt.builtins-wasm32.a. TinyGo would build
#   both from its submodules' sources; instead they are placed in its library
#   cache (.tinygo/cache/tinygo/<name>-wasm32-unknown-wasi-generic/lib.a), where
#   it looks first.
# - wasm-opt (asyncify, size): Debian's binaryen, through .tinygo/bin/wasm-opt
#   (setup writes it), which limits the inlining of one-caller functions.
# - TinyGo's `net` package (its src/net submodule, github.com/tinygo-org/net at
#   the commit TinyGo 0.39.0 shipped with): no registry serves it, so the
#   repository carries it in third_party/tinygo-net (BSD, see its LICENSE).
# - scripts/tinygo-patches/*.patch: fixes to TinyGo itself, each explained in
#   its header.
# - Go 1.25 (TinyGo 0.39 accepts Go 1.19 to 1.25): the Go toolchain module,
#   through GOTOOLCHAIN. redrive's go.mod says go 1.26.8, so the build uses a
#   copy of it saying go 1.25.0 (-modfile); the code needs nothing newer.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
TINYGO_VERSION=0.39.0
LLVM=19
GO_TOOLCHAIN=go1.25.14
DIR=$ROOT/.tinygo
TINYGOROOT=$DIR/root
TINYGO=$DIR/bin/tinygo
APT_PACKAGES=(llvm-$LLVM-dev libclang-$LLVM-dev clang-$LLVM lld-$LLVM libclang-rt-$LLVM-dev-wasm32 wasi-libc binaryen patch)

log() { echo "tinygo.sh: $*" >&2; }

apt_install() {
	local missing=()
	for p in "${APT_PACKAGES[@]}"; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
	done
	[ ${#missing[@]} -eq 0 ] && return
	local sudo=
	if [ "$(id -u)" -ne 0 ]; then
		command -v sudo >/dev/null 2>&1 || {
			log "missing Debian packages: ${missing[*]}; install them as root (apt-get install ${missing[*]}), or build with standard Go: make build TINYGO=0"
			exit 1
		}
		sudo=sudo
	fi
	command -v apt-get >/dev/null 2>&1 || {
		log "missing Debian packages and no apt-get: ${missing[*]}; build with standard Go instead: make build TINYGO=0"
		exit 1
	}
	log "apt-get install ${missing[*]}"
	export DEBIAN_FRONTEND=noninteractive
	$sudo apt-get update -qq
	$sudo apt-get install -y -qq "${missing[@]}" >/dev/null
}

go_toolchain_root() {
	# Downloads the toolchain module on first use.
	(cd "$ROOT" && GOTOOLCHAIN=$GO_TOOLCHAIN go env GOROOT)
}

setup() {
	apt_install
	local goroot
	goroot=$(go_toolchain_root)
	[ -x "$goroot/bin/go" ] || { log "no Go toolchain at $goroot"; exit 1; }

	# The stamp names everything the compiler and its root are made of.
	local key stamp
	key=$(cd "$ROOT" && cat scripts/tinygo-patches/*.patch third_party/tinygo-net/go.mod | sha256sum | cut -c1-12)
	stamp="$DIR/.setup-$TINYGO_VERSION-llvm$LLVM-$GO_TOOLCHAIN-$key"
	if [ ! -f "$stamp" ] || [ ! -x "$TINYGO" ]; then
		rm -f "$DIR"/.setup-*
		log "fetching github.com/tinygo-org/tinygo@v$TINYGO_VERSION"
		local src
		src=$(cd "$ROOT" && GOFLAGS=-mod=mod go mod download -json "github.com/tinygo-org/tinygo@v$TINYGO_VERSION" |
			sed -n 's/^\t"Dir": "\(.*\)",$/\1/p')
		[ -d "$src" ] || { log "go mod download gave no Dir"; exit 1; }
		rm -rf "$TINYGOROOT" "$DIR/bin"
		mkdir -p "$DIR/bin"
		cp -r "$src" "$TINYGOROOT"
		chmod -R u+w "$TINYGOROOT"
		# The src/net submodule; its go.mod only keeps it out of redrive's ./...
		mkdir -p "$TINYGOROOT/src/net"
		(cd "$ROOT/third_party/tinygo-net" && tar -c --exclude=go.mod .) | tar -x -C "$TINYGOROOT/src/net"
		for p in "$ROOT"/scripts/tinygo-patches/*.patch; do
			log "applying $(basename "$p")"
			patch -s -p1 -d "$TINYGOROOT" <"$p"
		done

		log "building tinygo with -tags llvm$LLVM"
		(cd "$TINYGOROOT" && GOTOOLCHAIN=local CGO_ENABLED=1 CC=clang-$LLVM CXX=clang++-$LLVM \
			go build -tags "llvm$LLVM" -o "$TINYGO" .)
		touch "$stamp"
	fi

	# Debian's prebuilt libraries where TinyGo's library cache expects them.
	local cache=$DIR/cache/tinygo arch=wasm32-unknown-wasi-generic
	mkdir -p "$cache/wasi-libc-$arch" "$cache/compiler-rt-$arch"
	cp /usr/lib/wasm32-wasi/libc.a "$cache/wasi-libc-$arch/lib.a"
	ln -sfn /usr/include/wasm32-wasi "$cache/wasi-libc-$arch/include"
	cp "/usr/lib/llvm-$LLVM/lib/clang/$LLVM/lib/wasi/libclang_rt.builtins-wasm32.a" "$cache/compiler-rt-$arch/lib.a"

	# wasm-opt as TinyGo runs it (asyncify, -Oz), but inlining a function
	# that has one caller only while it is small. Binaryen inlines every such
	# function by default, which made the main goroutine (main, what it calls
	# once, and the package initializers left for run time) one 71 KB
	# function, and V8 compiles a function that large much more slowly per
	# byte: 9-14 ms of a new instance's start, against 1-2 ms with the limit
	# (docs/benchmarks.md "Start-up, third pass: TinyGo flags and size").
	# Binaryen's own wasm-opt by its Debian path: by name, a PATH with
	# .tinygo/bin first would make the wrapper exec itself.
	cat >"$DIR/bin/wasm-opt" <<'WASMOPT'
#!/bin/sh
exec /usr/bin/wasm-opt --one-caller-inline-max-function-size=500 "$@"
WASMOPT
	chmod +x "$DIR/bin/wasm-opt"

	# go.mod as Go 1.25 reads it.
	mkdir -p "$DIR/mod"
	sed 's/^go 1\.2[6-9].*$/go 1.25.0/' "$ROOT/go.mod" >"$DIR/mod/go.mod"
	cp "$ROOT/go.sum" "$DIR/mod/go.sum"
}

tinygo_env() {
	local goroot
	goroot=$(go_toolchain_root)
	export PATH="$goroot/bin:$PATH"
	export GOTOOLCHAIN=local
	export TINYGOROOT
	export XDG_CACHE_HOME=$DIR/cache # TinyGo's cache: $XDG_CACHE_HOME/tinygo
	export GOFLAGS=-modfile=$DIR/mod/go.mod
	export WASMOPT=$DIR/bin/wasm-opt # setup writes it
}

case "${1:-}" in
setup)
	setup
	tinygo_env
	"$TINYGO" version
	;;
build)
	out=${2:?usage: scripts/tinygo.sh build OUT [tinygo build flags...]}
	shift 2
	setup
	tinygo_env
	cd "$ROOT"
	# -interp-timeout: TinyGo's compile-time run of package initializers
	# stops the build after 3 minutes of wall time; with
	# tinygo-patches/0003 it gets through crypto/internal/fips140/nistec's
	# (about 30 s of CPU), which on a loaded machine took longer.
	"$TINYGO" build -target wasm -no-debug -interp-timeout=20m "$@" -o "$out" .
	;;
env)
	tinygo_env
	env | grep -E '^(PATH|GOTOOLCHAIN|TINYGOROOT|XDG_CACHE_HOME|GOFLAGS|WASMOPT)='
	;;
*)
	sed -n '2,6p' "$0" >&2
	exit 2
	;;
esac
