#!/usr/bin/env bash
# Looks at a tlblab HTML report the way a person would:  bash scripts/check_html.sh DIR/index.html...
#
# For each page: headless Chromium loads it, runs its inline script (which sets
# <body data-plots-loaded="N"> once every <img> has decoded, or data-plots-failed="..."), and
# dumps the DOM; then takes a screenshot.  The page passes when every plot loaded (N equals the
# page's data-plots, and N > 0) and the screenshot is not blank (many non-white pixels, several
# distinct colours).  Installs Debian's chromium with apt-get when missing and running as root
# (CI); elsewhere a missing chromium is an error, never a silent skip.
set -euo pipefail

if [ "$#" -eq 0 ]; then
    echo "usage: $0 PAGE.html..." >&2
    exit 2
fi

browser=""
for b in chromium chromium-browser; do
    if command -v "$b" >/dev/null 2>&1; then browser="$b"; break; fi
done
if [ -z "$browser" ]; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
        echo "check_html: installing chromium (apt-get)" >&2
        export DEBIAN_FRONTEND=noninteractive
        apt-get update -qq >/dev/null
        apt-get install -y -qq chromium >/dev/null
        browser=chromium
    else
        echo "check_html: chromium is not installed (as root: apt-get install chromium)" >&2
        exit 1
    fi
fi

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
# Root needs --no-sandbox; a private profile dir keeps runs independent.
flags=(--headless --no-sandbox --disable-gpu --hide-scrollbars --no-first-run
       --user-data-dir="$work/profile" --virtual-time-budget=10000)

status=0
for page in "$@"; do
    if [ ! -f "$page" ]; then
        echo "check_html: $page: no such file" >&2
        status=1
        continue
    fi
    url="file://$(cd "$(dirname "$page")" && pwd)/$(basename "$page")"
    timeout 120 "$browser" "${flags[@]}" --dump-dom "$url" >"$work/dom.html" 2>"$work/dom.log" || {
        echo "check_html: $page: chromium --dump-dom failed:" >&2
        tail -5 "$work/dom.log" >&2
        status=1
        continue
    }
    timeout 120 "$browser" "${flags[@]}" --window-size=1280,2000 --screenshot="$work/shot.png" "$url" \
        >"$work/shot.log" 2>&1 || {
        echo "check_html: $page: chromium --screenshot failed:" >&2
        tail -5 "$work/shot.log" >&2
        status=1
        continue
    }
    python3 - "$page" "$work/dom.html" "$work/shot.png" <<'PY' || status=1
import re, struct, sys, zlib

page, dom_path, png_path = sys.argv[1:4]
dom = open(dom_path, encoding="utf-8", errors="replace").read()
body = re.search(r"<body([^>]*)>", dom)
attrs = dict(re.findall(r'([\w-]+)="([^"]*)"', body.group(1))) if body else {}
want = int(attrs.get("data-plots", "-1"))
if "data-plots-failed" in attrs:
    sys.exit(f"check_html: {page}: plots did not load: {attrs['data-plots-failed']}")
loaded = int(attrs.get("data-plots-loaded", "-1"))
if want <= 0 or loaded != want:
    sys.exit(f"check_html: {page}: {loaded} of {want} plots loaded (data-plots-loaded missing: script did not run?)")

def pixels(path):
    """Decodes an 8-bit RGB/RGBA non-interlaced PNG (what Chromium writes) to rows of bytes."""
    data = open(path, "rb").read()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, idat, ihdr = 8, b"", None
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        chunk = data[pos + 8:pos + 8 + n]
        if kind == b"IHDR":
            ihdr = struct.unpack(">IIBBBBB", chunk)
        elif kind == b"IDAT":
            idat += chunk
        pos += 12 + n
    w, h, depth, ctype, _, _, interlace = ihdr
    assert depth == 8 and ctype in (2, 6) and interlace == 0, f"unsupported PNG {ihdr}"
    bpp = 3 if ctype == 2 else 4
    raw, stride, rows, prev = zlib.decompress(idat), w * bpp, [], bytearray(w * bpp)
    for y in range(h):
        f, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b, c = prev[i], prev[i - bpp] if i >= bpp else 0
            if f == 1: line[i] = (line[i] + a) & 255
            elif f == 2: line[i] = (line[i] + b) & 255
            elif f == 3: line[i] = (line[i] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append(bytes(line))
        prev = line
    return w, h, bpp, rows

w, h, bpp, rows = pixels(png_path)
colours, nonwhite = set(), 0
for r in rows[::2]:
    for x in range(0, w * bpp, bpp * 2):
        px = r[x:x + 3]
        colours.add(px)
        if px != b"\xff\xff\xff":
            nonwhite += 1
sampled = (h // 2) * (w // 2)
share = nonwhite / max(sampled, 1)
if len(colours) < 16 or share < 0.02:
    sys.exit(f"check_html: {page}: screenshot looks blank ({len(colours)} colours, {share:.1%} non-white)")
print(f"check_html: {page}: {loaded} plots loaded; screenshot {w}x{h}, {len(colours)} colours, {share:.1%} non-white")
PY
done
exit "$status"
