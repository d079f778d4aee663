"""Media in rows (images, audio, video) → message parts `{type, ref}`, so none disappears unseen.

Recognised shapes: HF `Image`/`Audio` feature values (`{"bytes", "path"}`, `{"array", "sampling_rate"}`),
path / URL strings with a media extension, attachment records (`{file_name, url, mime_type}`: by mime type or
the file's extension), lists of those, and OpenAI / LLaVA content parts
(`{"type": "image_url", "image_url": {"url"}}`, `{"type": "image"}`). Bytes are never copied into a
record: a part refers back to where they are (`row:<field>[i]` for inline bytes).
"""

from __future__ import annotations

import re
from typing import Any

EXTENSIONS = {
    "image": (".png", ".jpg", ".jpeg", ".gif", ".webp", ".bmp", ".tif", ".tiff"),
    "audio": (".wav", ".mp3", ".flac", ".ogg", ".m4a", ".opus"),
    "video": (".mp4", ".avi", ".mov", ".mkv", ".webm"),
}
FIELD_HINTS = {
    "image": ("image", "img", "picture", "photo", "figure"),
    "audio": ("audio", "speech", "wav"),
    "video": ("video", "clip"),
}
# Keys of an attachment record: its mime type, and the names / addresses of its file.
MIME_KEYS = ("mime_type", "mimetype", "mime", "content_type", "media_type", "contentType", "mimeType")
NAME_KEYS = ("url", "file_name", "filename", "name", "file", "uri", "src")
PLACEHOLDERS = ("<image>", "<audio>", "<video>", "<|image|>", "<img>", "<|image_pad|>")
PLACEHOLDER_RX = re.compile("|".join(re.escape(p) for p in PLACEHOLDERS))


def kind_of(value: Any, field: str = "") -> str | None:
    """The media type of one value, or None when it is not media."""
    if isinstance(value, dict):
        if "sampling_rate" in value or "array" in value:
            return "audio"
        typ = value.get("type")
        if isinstance(typ, str):
            for kind in ("image", "audio", "video"):
                if typ.startswith(kind) or typ == f"input_{kind}":
                    return kind
        if "bytes" in value or "path" in value:
            path = str(value.get("path") or "")
            return _by_extension(path) or _by_field(field) or "image"
        # An attachment record (`{file_name, url, mime_type}`): its mime type, else a named file's extension.
        for key in MIME_KEYS:
            mime = value.get(key)
            if isinstance(mime, str) and (kind := mime.strip().lower().split("/")[0]) in EXTENSIONS:
                return kind
            if isinstance(mime, str) and mime.strip().lower() == "application/pdf":
                return "file"  # a document the text refers to: not text the row carries
        names: list[str] = [v for k in NAME_KEYS if isinstance(v := value.get(k), str)]
        for n in names:
            if found := _by_extension(n.split("?")[0]):
                return found
        return "file" if any(n.lower().split("?")[0].endswith(".pdf") for n in names) and _attachment(value) else None
    if isinstance(value, (bytes, bytearray)):
        return _by_field(field) or "image"
    if isinstance(value, str) and len(value) < 2048:
        return _by_extension(value.split("?")[0])
    return None


def _attachment(value: dict[str, Any]) -> bool:
    """A record that names a file and where it is (or what it is): an attachment, not a citation's title."""
    return sum(isinstance(value.get(k), str) for k in (*MIME_KEYS, *NAME_KEYS)) >= 2


def _by_extension(path: str) -> str | None:
    low = path.lower()
    return next((k for k, exts in EXTENSIONS.items() if low.endswith(exts)), None)


def _by_field(field: str) -> str | None:
    low = field.lower()
    return next((k for k, hints in FIELD_HINTS.items() if any(h in low for h in hints)), None)


def _ref(value: Any, where: str) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, dict):
        for key in ("path", "url", "uri", "src", "file_name", "filename", "file", "name"):
            if isinstance(value.get(key), str) and value[key]:
                return value[key]
        inner = value.get("image_url") or value.get(value.get("type", ""))
        if isinstance(inner, dict) and isinstance(inner.get("url"), str):
            return inner["url"][:512] if not inner["url"].startswith("data:") else f"row:{where}"
        if isinstance(inner, str) and inner:
            return inner[:512] if not inner.startswith("data:") else f"row:{where}"
    return f"row:{where}"


def parts_of(value: Any, field: str) -> list[dict[str, str]]:
    """Media parts in a field's value (a value or a list of values); [] when it holds none."""
    items = value if isinstance(value, list) else [value]
    parts = []
    for i, item in enumerate(items):
        kind = kind_of(item, field)
        if kind:
            parts.append({"type": kind, "ref": _ref(item, f"{field}[{i}]")})
    return parts


def is_media_field(values: list[Any], field: str) -> str | None:
    """The media type when most non-null sampled values of a field are media, else None."""
    present = [v for v in values if v is not None and v != []]
    if not present:
        return None
    kinds = [k for v in present for k in [p["type"] for p in parts_of(v, field)][:1]]
    if len(kinds) >= 0.5 * len(present):
        return max(set(kinds), key=kinds.count)
    return None


_MIME = re.compile(r"^\s*(?:image|audio|video)/[\w.+-]+\s*$|^\s*application/pdf\s*$", re.I)


def mime_column(values: list[Any]) -> bool:
    """A column of media mime types (`image/png`): the row has an attachment, wherever its bytes are."""
    present = [v for v in values if v not in (None, "")]
    return bool(present) and sum(isinstance(v, str) and bool(_MIME.match(v)) for v in present) >= 0.8 * len(present)


def attachment_columns(rows: list[dict[str, Any]], mime: str) -> list[str]:
    """The columns that locate the attachment a mime column describes: those sharing its name's prefix
    (`file_mime` → `file_url`, `file_name`), else url-valued columns; the mime column itself comes last."""
    prefix = re.split(r"[_.-]", mime, maxsplit=1)[0].lower()
    names = [k for k in dict.fromkeys(k for r in rows for k in r) if k != mime]
    urls = [k for k in names if all(isinstance(r.get(k), str) and "://" in r[k] for r in rows if r.get(k))]
    same = [k for k in names if re.split(r"[_.-]", k, maxsplit=1)[0].lower() == prefix and k != prefix]
    located = [k for k in same if all(isinstance(r.get(k), str) for r in rows if r.get(k) is not None)] or urls
    return [*located, mime]


def row_parts(row: dict[str, Any], fields: list[str]) -> list[dict[str, str]]:
    """Media parts of a row's media fields. A mime column (`image/png`) types the attachment its sibling
    fields locate (an opaque url, a bare file name), which no extension names."""
    parts = [p for name in fields if name in row for p in parts_of(row[name], name)]
    if parts:
        return parts
    mimes = [row[k] for k in fields if mime_column([row.get(k)])]
    refs = [row[k] for k in fields if isinstance(row.get(k), str) and row[k].strip() and not mime_column([row[k]])]
    if mimes and refs:
        mime = mimes[0].strip().lower()
        kind = "file" if mime == "application/pdf" else mime.split("/")[0]
        return [{"type": kind, "ref": refs[0][:512]}]
    return []


def placeholders_in(texts: list[str]) -> list[str]:
    return sorted({m.group(0) for t in texts for m in PLACEHOLDER_RX.finditer(t)})
