"""Forms of the tasks app: starting a task's next round (used by the admin)."""

from __future__ import annotations

from django import forms

# The choice of target models lists the registry's ready models of the task (presentation, not a write).
from models_registry.selectors import ready_models_for_task

from .context_files import ContextFileError, format_from_name
from .models import Task

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

    def __init__(self, task: Task, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.task = task
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
