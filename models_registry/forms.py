"""Forms of the model registry: the model card, registering a model (zip, hub id or endpoint), and starting
a task's next round with its target model(s)."""

from __future__ import annotations

from django import forms
from django.db.models import QuerySet

from core.form_fields import AsciiIdField
from models_registry.hub import is_valid_hub_id
from models_registry.models import RegisteredModel
from models_registry.names import model_name_problem
from models_registry.selectors import ready_models_for_task
from tasks.context_files import ContextFileError, format_from_name
from tasks.models import Task
from tasks.selectors import next_round_number


class ModelCardForm(forms.Form):
    """Name, task and the typed part of a model card. The parameter count is counted, never typed."""

    name = forms.CharField(max_length=200)
    task = forms.ModelChoiceField(queryset=Task.objects.none())
    backbone = forms.CharField(max_length=200, required=False, help_text="e.g. all-MiniLM-L6-v2")
    licence = forms.CharField(max_length=200, required=False, help_text="e.g. MIT, CC-BY-4.0")
    training_data = forms.CharField(
        required=False, widget=forms.Textarea(attrs={"rows": 2, "cols": 80, "dir": "auto"})
    )
    paper_link = forms.URLField(required=False, assume_scheme="https")
    description = forms.CharField(
        required=False, widget=forms.Textarea(attrs={"rows": 4, "cols": 80, "dir": "auto"})
    )

    def __init__(self, *args, tasks: QuerySet[Task], **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.fields["task"].queryset = tasks

    def clean(self):
        cleaned = super().clean()
        name, task = (cleaned.get("name") or "").strip(), cleaned.get("task")
        problem = model_name_problem(name) if name else None
        if problem:
            self.add_error("name", problem)
        elif (
            name
            and task
            # A failed model's name is the service's to judge: its owner may replace it by registering again.
            and RegisteredModel.objects.filter(task=task, name=name)
            .exclude(status=RegisteredModel.Status.FAILED)
            .exists()
        ):
            self.add_error("name", f"{task} already has a model named {name!r}.")
        cleaned["name"] = name
        return cleaned

    def card(self) -> dict:
        """The card fields as the ``card`` JSON of ``RegisteredModel`` (empty ones left out)."""
        keys = ("backbone", "licence", "training_data", "paper_link", "description")
        return {key: self.cleaned_data[key] for key in keys if self.cleaned_data.get(key)}


class RegisterModelForm(ModelCardForm):
    """Register a model: from a zip of a ``save_pretrained`` directory, a hub id, or an endpoint URL; for a
    red-teaming task, a chat model on an OpenAI-compatible server or on this server, with its generation
    settings (docs/generative.md, "Registering a generative model")."""

    SOURCES = [
        (RegisteredModel.Source.UPLOAD, "Zip of a save_pretrained directory"),
        (RegisteredModel.Source.HUB, "Model hub id (needs a reachable hub)"),
        (RegisteredModel.Source.ENDPOINT, "Remote inference endpoint (URL)"),
        (RegisteredModel.Source.CHAT_ENDPOINT, "OpenAI-compatible chat server (red-teaming tasks)"),
        (
            RegisteredModel.Source.LOCAL_DIR,
            "Chat model on this server: a folder or a .gguf file (red-teaming tasks)",
        ),
    ]

    source = forms.ChoiceField(
        choices=SOURCES, initial=RegisteredModel.Source.UPLOAD, widget=forms.RadioSelect
    )
    zip_file = forms.FileField(
        required=False,
        label="Zip file",
        help_text="The files of model.save_pretrained() and tokenizer.save_pretrained(), at the top of the "
        "zip or in one folder. Safetensors weights.",
    )
    hub_id = forms.CharField(max_length=200, required=False, label="Hub id", help_text="owner/name")
    endpoint_url = forms.URLField(
        required=False,
        label="Endpoint URL",
        assume_scheme="https",
        help_text="Receives signed POST requests; the signing secret is shown once, after registering.",
    )
    allow_pickle = forms.BooleanField(
        required=False,
        label="Allow pickle checkpoints",
        help_text="Loading a pickle (pytorch_model.bin) can run arbitrary code on this server. "
        "Tick only for a model you trust.",
    )

    chat_base_url = forms.URLField(
        required=False,
        label="Chat server base URL",
        assume_scheme="https",
        help_text="Up to /v1, e.g. https://llm.example.org/v1 (vLLM, llama.cpp, Ollama, TGI, a hosted API).",
    )
    chat_model_name = forms.CharField(
        max_length=200, required=False, label="Model name on the server", help_text="e.g. gpt-4o-mini"
    )
    api_key_env = forms.CharField(
        max_length=100,
        required=False,
        label="API key: environment variable",
        help_text="The NAME of a variable of the server's processes holding the key, e.g. OPENAI_API_KEY. "
        "Never the key itself: it is read when the model is called and never stored.",
    )
    api_key_file = forms.CharField(
        max_length=500,
        required=False,
        label="API key: file on the server",
        help_text="Or the path of a file whose first line is the key.",
    )
    local_path = forms.CharField(
        max_length=1000,
        required=False,
        label="Folder or .gguf file on this server",
        help_text="A save_pretrained folder of a causal LM with a chat template, or a GGUF file (converted once).",
    )
    system_prompt = forms.CharField(
        required=False, widget=forms.Textarea(attrs={"rows": 2, "cols": 80, "dir": "auto"}), max_length=10_000
    )
    temperature = forms.FloatField(required=False, min_value=0, max_value=2, help_text="0 decodes greedily.")
    top_p = forms.FloatField(required=False, min_value=0, max_value=1)
    max_new_tokens = forms.IntegerField(required=False, min_value=1, max_value=4096)
    stop = forms.CharField(
        required=False,
        widget=forms.Textarea(attrs={"rows": 2, "cols": 40}),
        help_text="Stop sequences, one per line.",
    )
    timeout = forms.FloatField(
        required=False, min_value=0.1, max_value=600, help_text="Seconds for a whole answer."
    )
    price_input_per_million = forms.FloatField(
        required=False, min_value=0, label="Price per million input tokens"
    )
    price_output_per_million = forms.FloatField(
        required=False, min_value=0, label="Price per million output tokens"
    )

    GENERATION_FIELDS = (
        "system_prompt",
        "temperature",
        "top_p",
        "max_new_tokens",
        "stop",
        "timeout",
        "price_input_per_million",
        "price_output_per_million",
    )

    field_order = [
        "source",
        "zip_file",
        "hub_id",
        "endpoint_url",
        "chat_base_url",
        "chat_model_name",
        "api_key_env",
        "api_key_file",
        "local_path",
        "name",
        "task",
    ]

    def generation_settings(self) -> dict:
        """The generation settings typed (``models_registry.generative.clean_generation_settings`` keys;
        empty ones left out, stop sequences one per line)."""
        settings = {}
        for key in self.GENERATION_FIELDS:
            value = self.cleaned_data.get(key)
            if value in (None, ""):
                continue
            if key == "stop":
                value = [line for line in value.splitlines() if line]
            settings[key] = value
        return settings

    def clean(self):
        cleaned = super().clean()
        source = cleaned.get("source")
        needed = {
            RegisteredModel.Source.UPLOAD: ("zip_file", "Choose the zip file."),
            RegisteredModel.Source.HUB: ("hub_id", "Enter the hub id (owner/name)."),
            RegisteredModel.Source.ENDPOINT: ("endpoint_url", "Enter the endpoint URL."),
            RegisteredModel.Source.CHAT_ENDPOINT: ("chat_base_url", "Enter the chat server's base URL."),
            RegisteredModel.Source.LOCAL_DIR: ("local_path", "Enter the folder or .gguf file."),
        }
        if source in needed:
            field, message = needed[source]
            if not cleaned.get(field) and field not in self.errors:
                self.add_error(field, message)
        hub_id = (cleaned.get("hub_id") or "").strip()
        if source == RegisteredModel.Source.HUB and hub_id and not is_valid_hub_id(hub_id):
            self.add_error("hub_id", "A hub id looks like owner/name.")
        return cleaned


MAX_CONTEXT_FILE_BYTES = 200 * 1024 * 1024


class StartRoundForm(forms.Form):
    """Description, target model(s) among the task's ready models, and an optional contexts file."""

    description = forms.CharField(
        required=False,
        widget=forms.Textarea(attrs={"rows": 3, "cols": 80, "dir": "auto"}),
        help_text="Shown with the round on the task page.",
    )
    models = forms.ModelMultipleChoiceField(
        queryset=None,
        widget=forms.CheckboxSelectMultiple,
        label="Target model(s)",
        help_text="One model, or several for an ensemble (the task's ensemble rule decides "
        "model-wrong: any, all or majority).",
        error_messages={"required": "Choose at least one target model."},
    )
    contexts_file = forms.FileField(
        required=False,
        label="Contexts file (optional)",
        help_text="JSONL (.jsonl) or CSV (.csv, with a header row), UTF-8. Each record: the task's context "
        "fields by name, and optionally tag, metadata (a JSON object) and id (loading is idempotent by id).",
    )

    #: The number of the round this form starts, as it was when the page was served: a second tab or a
    #: resubmission after that round started is refused instead of starting the round after it.
    round_number = AsciiIdField(widget=forms.HiddenInput, required=False)

    def __init__(self, task: Task, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.task = task
        self.fields["round_number"].initial = next_round_number(task)
        self.fields["models"].queryset = ready_models_for_task(task)
        names = [spec["name"] for spec in task.cfg.context_fields]
        if names:
            self.fields["contexts_file"].help_text += f" Context fields: {', '.join(names)}."

    def clean_contexts_file(self):
        upload = self.cleaned_data.get("contexts_file")
        if upload is None:
            return None
        try:
            self.contexts_format = format_from_name(upload.name)
        except ContextFileError as exc:
            raise forms.ValidationError(str(exc)) from None
        if upload.size > MAX_CONTEXT_FILE_BYTES:
            raise forms.ValidationError(f"The file is larger than {MAX_CONTEXT_FILE_BYTES // 2**20} MiB.")
        return upload
