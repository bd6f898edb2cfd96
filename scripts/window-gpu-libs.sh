#!/usr/bin/env bash
# Packs a window-enabled inkray built here with the shared libraries it needs into one tarball,
# for a GPU machine that has the NVIDIA driver but no SDL2, GLEW or OpenGL loader libraries (and
# no SDL2/GLEW headers to build the window with): scripts/window-gpu-check.sh unpacks it there and
# runs the program with LD_LIBRARY_PATH pointing at the libraries.
#
# What goes in:
#   bin/inkray   the program (built here for the GPU's architecture: CUDAARCHS / the default
#                75-real;90 covers the H100 and H200)
#   lib/         every library the program links (ldd) and, since SDL and GLEW load them at run
#                time, the .so files of the Debian packages of the window and the GLVND loaders
#                (libsdl2-2.0-0, libglew2.2, libegl1, libgl1, libglx0, libglvnd0, libopengl0,
#                libgles2: the set the device notes' .gl recipe downloads), with what they link.
#                Not the C library and its parts (libc, libm, libpthread, libdl, librt, the
#                loader), libstdc++ and libgcc_s (a newer system has newer ones, which serve), nor
#                anything of the NVIDIA driver (libcuda, libnvidia-*, libEGL_nvidia: the
#                machine's own must be used), nor NCCL (218 MB; the GPU machines have it installed).
#   MANIFEST     the files and the packages they came from
#
# Usage: scripts/window-gpu-libs.sh [INKRAY] [OUTPUT]
#   INKRAY default build/inkray; OUTPUT default .winlibs/inkray-window.tar.gz (.winlibs/ is
#   ignored by git: name it in the device call's carry list).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
inkray=$(realpath "${1:-$root/build/inkray}")
output=${2:-$root/.winlibs/inkray-window.tar.gz}
packages=(libsdl2-2.0-0 libglew2.2 libegl1 libgl1 libglx0 libglvnd0 libopengl0 libgles2)

if [[ ! -x $inkray ]]; then
  echo "window-gpu-libs: no program at $inkray; build first (./scripts/setup.sh)"
  exit 1
fi
# The window's help (SDL_VIDEODRIVER counts as a display) names its options.
help=$(SDL_VIDEODRIVER=offscreen "$inkray" --device cpu --help 2>/dev/null || true)
if [[ $help != *--bench-window* ]]; then
  echo "window-gpu-libs: $inkray has no window (built without SDL2/GLEW); install libsdl2-dev and libglew-dev and rebuild"
  exit 1
fi

stage=$(mktemp -d "${TMPDIR:-/tmp}/inkray-window-libs-XXXXXX")
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/bin" "$stage/lib"
cp "$inkray" "$stage/bin/inkray"

# Libraries the machine provides itself, or must (the driver's).
skip='/(libc|libm|libpthread|libdl|librt|libresolv|libutil|ld-linux-x86-64|libstdc\+\+|libgcc_s|libcuda|libnvidia-[^/]*|libEGL_nvidia|libGLX_nvidia|libnccl)\.so'
declare -A seen=()
manifest=()
add_closure() { # the file and everything ldd resolves for it
  local file=$1 dep
  while read -r dep; do
    [[ -n $dep && -e $dep ]] || continue
    [[ $dep =~ $skip ]] && continue
    # Under its SONAME, the name the loader looks for (libEGL.so.1, not libEGL.so.1.1.0).
    local name
    name=$(readelf -d "$dep" 2>/dev/null | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
    [[ -n $name ]] || name=$(basename "$dep")
    [[ -n ${seen[$name]:-} ]] && continue
    seen[$name]=1
    cp -L "$dep" "$stage/lib/$name"
    manifest+=("lib/$name  <- $dep ($(dpkg -S "$(realpath "$dep")" 2>/dev/null | head -1 | cut -d: -f1 || true))")
  done < <({ [[ $file == "$inkray" ]] || echo "$file"; ldd "$file" 2>/dev/null | awk '$2 == "=>" && $3 ~ /^\// {print $3} $1 ~ /^\// {print $1}'; })
}

add_closure "$inkray"
missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
    continue
  fi
  while read -r f; do
    [[ -f $f && $f =~ \.so(\.[0-9]+)*$ ]] && add_closure "$f"
  done < <(dpkg -L "$p" | grep -E '/lib/.*\.so')
done
if ((${#missing[@]})); then
  echo "window-gpu-libs: Debian packages not installed here: ${missing[*]} (sudo apt-get install -y ${missing[*]})"
  exit 1
fi

{
  echo "inkray window bundle, made $(date -u +%Y-%m-%dT%H:%MZ) on $(. /etc/os-release && echo "$PRETTY_NAME")"
  echo "bin/inkray  <- $inkray ($(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown commit))"
  printf '%s\n' "${manifest[@]}" | sort
} >"$stage/MANIFEST"
mkdir -p "$(dirname "$output")"
tar -czf "$output" -C "$stage" .
echo "window-gpu-libs: $output: bin/inkray and ${#manifest[@]} libraries, $(du -h "$output" | cut -f1)"
