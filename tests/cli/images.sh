#!/usr/bin/env bash
# ltx2-distilled on the embedded tiny model conditioned on JPEG and WebP images (the committed test
# images of tests/data/media): from the command line, through --jobs, and decoded by the worker
# processes of a fleet (the same file as in this process); a file that is not an accepted image, an
# EXR and a truncated JPEG each fail in one line naming --image and the file.
source "$(dirname "$0")/lib.bash"
exe="$LTX2_BIN/ltx2-distilled"
export LTX2_CACHE_DIR="$scratch/cache"
media="$LTX2_SOURCE_DIR/tests/data/media"
small=(--prompt "a cat" --seed 5 --height 64 --width 64 --num-frames 9)

"$exe" --help | grep -q "image (PNG, JPEG or WebP)" || fail "--help does not name the image formats"

# A JPEG (EXIF orientation 6) from the command line; the image changes the video.
expect_exit 0 "$exe" "${small[@]}" --image "$media/photo.jpg" 0 1.0 --output-path "$scratch/jpeg.mp4"
expect_mp4 "$scratch/jpeg.mp4" 9 64 64 24
expect_exit 0 "$exe" "${small[@]}" --output-path "$scratch/none.mp4"
cmp -s "$scratch/jpeg.mp4" "$scratch/none.mp4" && fail "the JPEG condition left the video unchanged"

# Two CPU worker processes decode the image themselves: the same file.
expect_exit_no_workers 0 "$exe" "${small[@]}" --image "$media/photo.jpg" 0 1.0 --ranks 2 \
  --output-path "$scratch/jpeg_r2.mp4"
cmp -s "$scratch/jpeg.mp4" "$scratch/jpeg_r2.mp4" || fail "--ranks 2 with a JPEG differs from the in-process run"

# --jobs: a lossy and a lossless WebP run; a line with a GIF fails naming the flag and the file.
cat > "$scratch/jobs.jsonl" <<JOBS
{"output_path": "$scratch/lossy.mp4", "images": [["$media/lossy.webp", 0, 1.0]]}
{"output_path": "$scratch/gif.mp4", "images": [["$media/photo.gif", 0, 1.0]]}
{"output_path": "$scratch/lossless.mp4", "images": [{"path": "$media/lossless.webp", "frame": 8, "strength": 0.5}]}
JOBS
expect_exit 1 "$exe" "${small[@]}" --jobs "$scratch/jobs.jsonl"
expect_contains "line 2: --image $media/photo.gif: not a PNG, JPEG or WebP image"
expect_contains "1 of 3 jobs failed"
expect_mp4 "$scratch/lossy.mp4" 9 64 64 24
expect_mp4 "$scratch/lossless.mp4" 9 64 64 24
expect_no_output "$scratch/gif.mp4"

# Refused before any work, in one line naming --image and the file.
printf 'not an image' > "$scratch/text.jpg"
printf 'v/1\001\002\000\000\000' > "$scratch/linear.exr"
o="$scratch/bad.mp4"
for bad in "$scratch/text.jpg:not a PNG, JPEG or WebP image" "$media/photo.gif:not a PNG, JPEG or WebP image" \
           "$scratch/linear.exr:an OpenEXR image" "$media/oversized.jpg:40x9000 pixels, more than the 8192x8192"; do
  file=${bad%%:*}
  expect_exit 1 "$exe" "${small[@]}" --image "$file" 0 1.0 --output-path "$o"
  expect_one_line
  expect_contains "--image $file: ${bad#*:}"
  expect_no_output "$o"
done
# A truncated JPEG passes the header check and fails when the run decodes it, naming it.
expect_exit 1 "$exe" "${small[@]}" --image "$media/truncated.jpg" 0 1.0 --output-path "$o"
expect_contains "--image $media/truncated.jpg: cannot decode the JPEG"
expect_no_output "$o"

finish
