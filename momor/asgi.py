"""ASGI entry point: first the bounds of a request's URL and headers (`gateway.edge.head_limit`);
then over HTTP, the lean completions route for Bearer-key calls (its bodies bounded by the
guard's limits), else the body-size guard, the operations routes (probes, metrics), then
Django; Channels consumers over websockets."""

from __future__ import annotations

import os
import sys

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "momor.settings")
# The refresher and the journal's threads run beside the event loop; a call waiting on them
# for the GIL waits at most this long (Python's default, 5 ms, showed in the latency).
sys.setswitchinterval(0.0005)
django_asgi_app = get_asgi_application()

# Django must be set up before these imports (pyproject.toml's ruff per-file-ignores let E402
# pass in this file).
from channels.auth import AuthMiddlewareStack
from channels.routing import ProtocolTypeRouter, URLRouter
from channels.security.websocket import AllowedHostsOriginValidator
from django.conf import settings
from django.urls import path

from billing.live.consumers import GenerationFeed
from core.asgi_types import ASGIApp
from gateway.edge.asgi_route import LeanCompletions
from gateway.edge.body_limit import BodyLimit, WebsocketMessageLimit
from gateway.edge.head_limit import HeadLimit
from gateway.edge.lifespan import lifespan
from gateway.ops.routes import OperationsRoutes
from gateway.ops.setup import serve_metrics_port
from momor import collector

# The probes and /metrics answer ahead of Django: no authentication, limit or record.
body_limit = BodyLimit(
    OperationsRoutes(django_asgi_app), settings.MOMOR_MAX_BODY_BYTES, settings.MOMOR_BODY_TIMEOUT
)
http_app: ASGIApp = (
    LeanCompletions(body_limit, body_limit) if settings.MOMOR_LEAN_COMPLETIONS else body_limit
)
serve_metrics_port()
if "daphne.server" in sys.modules:  # served by Daphne: see momor/under_daphne.py
    from momor.under_daphne import install

    install(body_limit)
if "uvicorn" in sys.modules:  # served by uvicorn: see momor/under_uvicorn.py
    from momor.under_uvicorn import install as install_under_uvicorn

    install_under_uvicorn()

# Channels routes with django.urls.path, whose stub takes views alone; and URLRouter's stub
# wants its own URLPattern subclass, which path is not typed to return.
websocket_routes = [path("ws/generations/", GenerationFeed.as_asgi())]  # type: ignore[arg-type]  # a consumer; the stub takes views

application = ProtocolTypeRouter(
    {
        "http": HeadLimit(http_app),
        "lifespan": lifespan,
        "websocket": HeadLimit(
            WebsocketMessageLimit(
                AllowedHostsOriginValidator(
                    AuthMiddlewareStack(URLRouter(websocket_routes))  # type: ignore[arg-type]  # Django's URLPatterns, which Channels routes
                ),
                settings.MOMOR_WEBSOCKET_MESSAGE_BYTES,
            )
        ),
    }
)
collector.tune()  # last: what was built so far lives as long as the process
