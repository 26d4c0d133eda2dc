"""The round releases API (``cycle.releases.services``).

* ``GET /api/tasks/{slug}/rounds/{n}/releases/``: the round's releases, oldest first (anyone, when the
  task is active; its owners otherwise);
* ``POST`` there (the task's owners): release the round now; 201 with the new version, or 200 with the
  latest one when nothing changed since; 409 when the round has nothing to release;
* ``GET /api/tasks/{slug}/rounds/{n}/releases/{version}/``: one release;
* ``GET /api/tasks/{slug}/rounds/{n}/releases/{version}/files/{name}``: one of its files, as stored.

Every answer carries the data's ``licence`` (the task config's; ANLI's is CC BY-NC 4.0, non-commercial
only), and a file download its ``X-Dataset-Licence`` header, so a script that only downloads still sees it.
An unknown or hidden task, round, release or file answers 404.
"""

from __future__ import annotations

from django.http import Http404
from django.urls import reverse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import exceptions, serializers, status
from rest_framework.permissions import IsAuthenticatedOrReadOnly
from rest_framework.response import Response
from rest_framework.views import APIView

from core.api.lookups import positive_int_or_404
from core.streaming import file_response
from models_registry.serializers import ModelErrorSerializer
from tasks.models import Round, Task

from ..models import Release
from .services import ReleaseError, create_release, release_dir, release_files

ERROR = ModelErrorSerializer


class ReleaseSerializer(serializers.ModelSerializer):
    task = serializers.SlugRelatedField(slug_field="slug", read_only=True)
    round = serializers.IntegerField(source="round.number", read_only=True)
    created_by = serializers.SerializerMethodField()
    files = serializers.SerializerMethodField()

    class Meta:
        model = Release
        fields = [
            "task", "round", "version", "created_at", "created_by", "sha256", "licence", "format_version",
            "counts", "lineage", "files",
        ]  # fmt: skip
        read_only_fields = fields

    def get_created_by(self, release) -> str:
        return release.created_by.get_username() if release.created_by_id else ""

    def get_files(self, release) -> dict[str, str]:
        request = self.context["request"]
        return {
            name: request.build_absolute_uri(
                reverse(
                    "api-release-file", args=[release.task.slug, release.round.number, release.version, name]
                )
            )
            for name in release_files(release)
        }


class NothingToRelease(exceptions.APIException):
    status_code = status.HTTP_409_CONFLICT
    default_code = "nothing_to_release"


def _round_or_404(request, slug: str, number: str) -> Round:
    """The round, when the caller may read its releases: the task is active, or they own it."""
    task = Task.objects.filter(slug=slug).first()
    if task is None or not (task.is_active or task.is_owner(request.user)):
        raise Http404("No such task.")
    round_ = Round.objects.filter(task=task, number=positive_int_or_404(number, what="round")).first()
    if round_ is None:
        raise Http404("No such round.")
    return round_


def _release_or_404(request, slug: str, number: str, version: str) -> Release:
    round_ = _round_or_404(request, slug, number)
    release = (
        Release.objects.select_related("task", "round", "created_by")
        .filter(round=round_, version=positive_int_or_404(version, what="release"))
        .first()
    )
    if release is None:
        raise Http404("No such release.")
    return release


class ReleaseList(APIView):
    """``GET`` a round's releases; ``POST`` (owners) releases it now."""

    permission_classes = [IsAuthenticatedOrReadOnly]

    @extend_schema(
        summary="List a round's releases", responses={200: ReleaseSerializer(many=True), 404: ERROR}
    )
    def get(self, request, slug: str, number: str):
        round_ = _round_or_404(request, slug, number)
        releases = Release.objects.filter(round=round_).select_related("task", "round", "created_by")
        return Response(
            ReleaseSerializer(releases.order_by("version"), many=True, context={"request": request}).data
        )

    @extend_schema(
        summary="Release a round (task owners)",
        request=None,
        responses={201: ReleaseSerializer, 200: ReleaseSerializer, 403: ERROR, 404: ERROR, 409: ERROR},
    )
    def post(self, request, slug: str, number: str):
        round_ = _round_or_404(request, slug, number)
        if not round_.task.is_owner(request.user):
            raise exceptions.PermissionDenied("Only the task's owners may release its rounds.")
        try:
            release, created = create_release(round_=round_, user=request.user)
        except ReleaseError as exc:
            raise NothingToRelease(str(exc)) from None
        data = ReleaseSerializer(release, context={"request": request}).data
        return Response(data, status=status.HTTP_201_CREATED if created else status.HTTP_200_OK)


class ReleaseDetail(APIView):
    """``GET`` one release."""

    permission_classes = [IsAuthenticatedOrReadOnly]

    @extend_schema(summary="Read a release", responses={200: ReleaseSerializer, 404: ERROR})
    def get(self, request, slug: str, number: str, version: str):
        release = _release_or_404(request, slug, number, version)
        return Response(ReleaseSerializer(release, context={"request": request}).data)


CONTENT_TYPES = {
    ".jsonl": "application/x-ndjson; charset=utf-8",
    ".json": "application/json",
    ".md": "text/markdown; charset=utf-8",
}


class ReleaseFile(APIView):
    """``GET`` one file of a release, byte for byte as stored."""

    permission_classes = [IsAuthenticatedOrReadOnly]

    @extend_schema(
        summary="Download a release file",
        responses={(200, "application/octet-stream"): OpenApiTypes.BINARY, 404: OpenApiResponse(ERROR)},
    )
    def get(self, request, slug: str, number: str, version: str, name: str):
        release = _release_or_404(request, slug, number, version)
        if name not in release_files(release):  # only the release's own names: no path ever reaches the disk
            raise Http404("No such file.")
        path = release_dir(release) / name
        if not path.is_file():
            raise Http404("No such file.")
        response = file_response(
            request,
            path.open("rb"),
            as_attachment=True,
            filename=f"{release.task.slug}-round-{release.round.number}-v{release.version}-{name}",
            content_type=CONTENT_TYPES[path.suffix],
        )
        # Header values are Latin-1: keep the licence's ASCII (its CC identifier always is).
        response["X-Dataset-Licence"] = release.licence.encode("ascii", "replace").decode() or "unspecified"
        return response
