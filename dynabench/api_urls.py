"""``/api/``: every app's API routes, the OpenAPI schema and the interactive docs, and the API's root
(``GET /api/``), which lists them."""

from functools import lru_cache

from django.urls import include, path, re_path, reverse
from django.views.decorators.csrf import csrf_exempt
from drf_spectacular.generators import SchemaGenerator
from drf_spectacular.utils import extend_schema
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView
from rest_framework import serializers
from rest_framework.permissions import AllowAny
from rest_framework.response import Response
from rest_framework.views import APIView

from core.middleware import ApiJsonResponse

HTTP_METHODS = ("get", "post", "put", "patch", "delete")


@lru_cache(maxsize=1)
def api_endpoints() -> tuple[dict, ...]:
    """Every operation of the OpenAPI document, ``{"path": "/api/...", "methods": ["GET", ...],
    "summary": its description's first sentence}`` sorted by path; read from the schema once per process (the URL configuration does
    not change while it runs)."""
    schema = SchemaGenerator().get_schema(request=None, public=True)
    rows = []
    for route, operations in sorted(schema.get("paths", {}).items()):
        methods = [m.upper() for m in HTTP_METHODS if m in operations]
        first = operations[methods[0].lower()] if methods else {}
        text = " ".join((first.get("summary") or first.get("description") or "").split())
        summary = text.split(". ")[0].rstrip(".") + "." if text else ""
        rows.append({"path": route, "methods": methods, "summary": summary})
    return tuple(rows)


class EndpointSerializer(serializers.Serializer):
    path = serializers.CharField(help_text="The route, with {placeholders} as in the schema.")
    methods = serializers.ListField(child=serializers.CharField())
    summary = serializers.CharField(
        allow_blank=True, help_text="The first sentence of the operation's description."
    )


class ApiRootSerializer(serializers.Serializer):
    schema = serializers.CharField(help_text="The OpenAPI document (YAML; ?format=json for JSON).")
    docs = serializers.CharField(help_text="The interactive documentation of that document.")
    endpoints = EndpointSerializer(many=True)


class ApiRoot(APIView):
    """The API's root: where its OpenAPI document and interactive docs are, and every endpoint with its
    methods. Public, as the document is; the endpoints say themselves who may call them."""

    permission_classes = [AllowAny]

    @extend_schema(responses={200: ApiRootSerializer})
    def get(self, request):
        return Response(
            {
                "schema": request.build_absolute_uri(reverse("api-schema")),
                "docs": request.build_absolute_uri(reverse("api-docs")),
                "endpoints": list(api_endpoints()),
            }
        )


@csrf_exempt
def not_found(request, *args, **kwargs):
    """An ``/api/`` URL no route matches (e.g. ``/api/models/-1/``): a JSON 404, not the site's HTML page,
    for every method: CSRF-exempt, since it changes nothing and a POST would otherwise meet Django's
    HTML CSRF page first."""
    return ApiJsonResponse({"detail": "Not found."}, status=404)


urlpatterns = [
    path("", ApiRoot.as_view(), name="api-root"),
    path("schema/", SpectacularAPIView.as_view(), name="api-schema"),
    path("docs/", SpectacularSwaggerSplitView.as_view(url_name="api-schema"), name="api-docs"),
    path("", include("tasks.api_urls")),
    path("", include("annotation.api_urls")),
    path("", include("validation.api_urls")),
    path("", include("crowd.api_urls")),
    path("", include("generative_bench.api_urls")),
    path("", include("models_registry.api_urls")),
    path("", include("leaderboards.api_urls")),
    path("", include("cycle.api_urls")),
    re_path(r"^", not_found),  # last: only what no API route matched
]
