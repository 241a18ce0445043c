"""/static/ served by Momor itself, DEBUG or not (MOMOR_SERVE_STATIC): the UI's few small files,
read whole, so the response is not a file stream that ASGI would have to iterate in a thread."""

from __future__ import annotations

import mimetypes
import posixpath
from pathlib import Path

from django.contrib.staticfiles import finders
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseNotModified
from django.utils.http import http_date
from django.views.static import was_modified_since

MAX_AGE = 3600


def static_file(request: HttpRequest, path: str) -> HttpResponse:
    found = finders.find(posixpath.normpath(path).lstrip("/"))
    if not found or not isinstance(found, str) or not Path(found).is_file():
        raise Http404(path)
    stat = Path(found).stat()
    if not was_modified_since(request.headers.get("if-modified-since"), int(stat.st_mtime)):
        return HttpResponseNotModified()
    content_type, encoding = mimetypes.guess_type(found)
    response = HttpResponse(Path(found).read_bytes(), content_type=content_type or "text/plain")
    response["Last-Modified"] = http_date(stat.st_mtime)
    response["Cache-Control"] = f"public, max-age={MAX_AGE}"
    if encoding:
        response["Content-Encoding"] = encoding
    return response
