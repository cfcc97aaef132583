#!/usr/bin/env bash
# Moves the golden cases that no unit, GPU, fleet or multi-GPU test reads out of the working tree,
# and back. Why: the device tool sends the working tree to the GPU machine and refuses one over
# 64 MiB (disk blocks); the golden fixtures are most of it, and the suites a GPU run takes
# (`scripts/gpu_build.sh --test`: labels gpu and unit) read only some of them. The golden and CLI
# labels, which read the rest, run here and in CI.
#
#   scripts/golden_aside.sh out   # before the device calls: prints what moved and the size left
#   scripts/golden_aside.sh back  # after them (also safe to run twice)
#
# A case counts as read when its folder name appears quoted in tests/unit, tests/fleet,
# tests/multigpu or tests/support, or a case read so names it in case.json "models_from". Cases git
# does not track yet stay (work in progress); `back` never overwrites a case made again meanwhile.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
golden="$root/tests/data/golden"
aside="$root/../.golden-aside-$(basename "$root")"

case "${1:-}" in
  out)
    mkdir -p "$aside"
    readers=("$root/tests/unit" "$root/tests/fleet" "$root/tests/multigpu" "$root/tests/support")
    needed=()
    for dir in "$golden"/*/; do
      name=$(basename "$dir")
      grep -rqF "\"$name\"" "${readers[@]}" && needed+=("$name")
    done
    for name in "${needed[@]}"; do  # the model sets those cases borrow
      from=$(sed -n 's/.*"models_from": *"\([^"]*\)".*/\1/p' "$golden/$name/case.json" 2>/dev/null || true)
      [ -n "$from" ] && needed+=("$from")
    done
    for dir in "$golden"/*/; do
      name=$(basename "$dir")
      [ "$name" = generators ] && continue
      printf '%s\n' "${needed[@]}" | grep -qx "$name" && continue
      # A case git does not track yet is someone's work in progress (a generator may be writing it).
      [ -n "$(git -C "$root" ls-files -- "tests/data/golden/$name")" ] || continue
      mv "$dir" "$aside/$name"
      echo "aside: $name"
    done
    echo "what travels: $(cd "$root" && git ls-files -z | xargs -0 du -ck 2>/dev/null | tail -1 | cut -f1) KiB"
    ;;
  back)
    [ -d "$aside" ] || exit 0
    for dir in "$aside"/*/; do
      [ -d "$dir" ] || continue
      name=$(basename "$dir")
      if [ -e "$golden/$name" ]; then  # made again meanwhile: keep both, say so
        echo "not back: $name exists in $golden again; the moved copy stays in $aside" >&2
        continue
      fi
      mv "$dir" "$golden/$name"
      echo "back: $name"
    done
    rmdir "$aside" 2>/dev/null || true
    git -C "$root" status --short -- tests/data/golden
    ;;
  *)
    echo "usage: $0 out|back" >&2
    exit 2
    ;;
esac
