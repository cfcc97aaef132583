#!/usr/bin/env python3
"""Writes the conditioning-image test files of tests/data/media/ with Pillow, and beside each
image that decodes the RGB array the reference's decode_image (PIL) gives for it, as a binary PPM
(P6, 8-bit) of the same name + ".ppm". tests/unit/media/test_image_formats.cpp compares the
engine's reader with those: exactly for PNG and lossless WebP, within the stated tolerance for
JPEG and lossy WebP.

The expected arrays follow the reference's decode_image (ltx_pipelines/utils/media_io/decode.py)
less its ICC conversion, which the engine does not do: the EXIF orientations 3, 6 and 8 turned
by PIL's rotate (180, 270, 90 degrees anticlockwise), the others left as stored, then RGB
(alpha dropped, grey repeated).

Run from anywhere: python3 tests/data/media/generators/make_images.py (needs Pillow and numpy).
The encoders' output depends on the Pillow build, so rerunning may change the bytes; the arrays
are rewritten with them.
"""

from io import BytesIO
from pathlib import Path

import numpy as np
from PIL import Image, ImageCms

OUT = Path(__file__).resolve().parent.parent
ORIENTATION = 0x0112
ROTATION = {3: 180, 6: 270, 8: 90}  # the reference's _ORIENTATION_TO_ROTATION


def picture(height: int, width: int) -> np.ndarray:
    """Smooth colour gradients with a sharp-edged square: chroma upsampling is exercised on both."""
    y, x = np.mgrid[0:height, 0:width].astype(np.float64)
    r = 128 + 100 * np.sin(x / 6.0) * np.cos(y / 5.0)
    g = x * 255 / (width - 1)
    b = 255 - y * 255 / (height - 1)
    rgb = np.stack([r, g, b], -1)
    rgb[height // 4 : height // 2, width // 3 : width // 2] = [250, 20, 30]
    return rgb.clip(0, 255).round().astype(np.uint8)


def exif(orientation: int) -> bytes:
    e = Image.Exif()
    e[ORIENTATION] = orientation
    return e.tobytes()


def reference_decode(path: Path) -> np.ndarray:
    with Image.open(path) as image:
        orientation = image.getexif().get(ORIENTATION)
        if orientation in ROTATION:
            image = image.rotate(ROTATION[orientation], expand=True)
        if image.mode == "LA":
            image = image.convert("L")
        return np.array(image.convert("RGB"), dtype=np.uint8)


def write_ppm(path: Path, rgb: np.ndarray) -> None:
    h, w, _ = rgb.shape
    path.write_bytes(f"P6\n{w} {h}\n255\n".encode() + rgb.tobytes())


def renamed_srgb_profile() -> bytes:
    """Pillow's built-in sRGB profile, described as "Wide built-in": a valid RGB profile whose
    description does not say sRGB (the engine warns about such a profile and converts nothing)."""
    profile = ImageCms.ImageCmsProfile(ImageCms.createProfile("sRGB")).tobytes()
    old, new = "sRGB".encode("utf-16-be"), "Wide".encode("utf-16-be")
    assert profile.count(old) == 1
    return profile.replace(old, new)


def main() -> None:
    rgb = picture(24, 40)
    image = Image.fromarray(rgb)
    alpha = np.linspace(0, 255, 24 * 40).reshape(24, 40, 1).astype(np.uint8)
    rgba = Image.fromarray(np.concatenate([rgb, alpha], -1), "RGBA")
    srgb = ImageCms.ImageCmsProfile(ImageCms.createProfile("sRGB")).tobytes()

    images = {
        "photo.png": lambda p: image.save(p, exif=exif(3)),
        "mirrored.png": lambda p: image.save(p, exif=exif(5)),
        "rgba.png": lambda p: rgba.save(p),
        "photo.jpg": lambda p: image.save(p, quality=90, exif=exif(6), icc_profile=srgb),
        "grey.jpg": lambda p: image.convert("L").save(p, quality=90),
        "lossless.webp": lambda p: rgba.save(p, lossless=True, exif=exif(8)),
        "lossy.webp": lambda p: rgba.save(p, quality=80),
        "wide_profile.png": lambda p: image.save(p, icc_profile=renamed_srgb_profile()),
    }
    for name, save in images.items():
        path = OUT / name
        save(path)
        write_ppm(OUT / (name + ".ppm"), reference_decode(path))

    # Files that must be refused, each naming itself.
    (OUT / "not_an_image.png").write_bytes(b"this is a text file, not an image\n")
    jpeg = (OUT / "photo.jpg").read_bytes()
    # Cut halfway through the compressed data: the header is whole, the picture is not.
    sos = jpeg.index(b"\xff\xda")
    (OUT / "truncated.jpg").write_bytes(jpeg[: (sos + len(jpeg)) // 2])
    # photo.jpg with its frame header declaring 9000 x 40 pixels: refused from the header.
    sof = jpeg.index(b"\xff\xc0")
    (OUT / "oversized.jpg").write_bytes(jpeg[: sof + 5] + (9000).to_bytes(2, "big") + jpeg[sof + 7 :])
    gif = BytesIO()
    image.save(gif, format="GIF")
    (OUT / "photo.gif").write_bytes(gif.getvalue())


if __name__ == "__main__":
    main()
