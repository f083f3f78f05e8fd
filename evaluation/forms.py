"""Forms of the evaluation pages: run filters, the predictions upload, starting a generated run and the
language model editor."""

from __future__ import annotations

import re
import uuid
from typing import Any

from django import forms
from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError

from contributions.models import Release
from contributions.selectors.releases import releases_runnable
from evaluation import llm
from evaluation.models import EvaluationRun, LanguageModel
from evaluation.services.estimates import MAX_SAMPLES, RunDefaults, release_run_defaults
from evaluation.services.generation import generation_refusal
from evaluation.services.uploads import MODEL_KEY_RE, NewModel, upload_limits
from researchcodebench.predictions import human_size
from researchcodebench.problems import TEMPLATES

#: the paper setting as a choice (a checkbox cannot tell "unticked" from "not sent")
PAPER_CHOICES = [("with", "With the paper in the prompt"), ("without", "Without the paper")]

#: an environment variable name as the portal accepts it (POSIX portable, upper case: RCB_LLM_KEY_OPENAI)
ENV_NAME_RE = re.compile(r"^[A-Z_][A-Z0-9_]{0,99}$")
#: prefixes of real provider keys (OpenAI, Anthropic, OpenRouter, xAI, Groq, Google, Hugging Face, GitHub, ...)
KEY_PREFIXES = ("sk-", "sk_", "xai-", "gsk_", "aiza", "hf_", "ghp_", "github_pat_", "pplx-", "r8_", "nvapi-")


def validate_model_key(value: str) -> None:
    if not MODEL_KEY_RE.match(value):
        raise ValidationError(
            "Use 1-100 letters, digits, '.', '_' or '-', starting with a letter or digit (e.g. gpt-4.1).",
            code="invalid_key",
        )


def looks_like_api_key(value: str) -> bool:
    """True for a value that is probably a secret rather than the name of a variable holding one.

    Known provider prefixes, or a long token mixing lower case, upper case and digits (names of
    environment variables are upper case words joined by '_').
    """
    lowered = value.lower()
    if lowered.startswith(KEY_PREFIXES) or lowered.startswith("bearer "):
        return True
    compact = value.replace("-", "").replace("_", "")
    mixed = any(c.islower() for c in compact) and any(c.isdigit() for c in compact)
    return len(value) >= 24 and mixed


def validate_api_key_env(value: str) -> None:
    """A variable name (never a pasted key) that the portal may read as a key (``llm.key_env_refusal``): the
    same rule is applied again at call time, for rows saved before it or outside this form."""
    if looks_like_api_key(value):
        raise ValidationError(
            "This looks like an API key. Never paste keys here: give the NAME of the environment variable "
            "that holds the key on the workers (e.g. RCB_LLM_KEY_OPENAI).",
            code="looks_like_key",
        )
    if not ENV_NAME_RE.match(value):
        raise ValidationError(
            "Give an environment variable name: upper-case letters, digits and '_' (e.g. RCB_LLM_KEY_OPENAI).",
            code="invalid_env_name",
        )
    refusal = llm.key_env_refusal(value)
    if refusal:
        raise ValidationError(refusal[0].upper() + refusal[1:] + ".", code="key_env_not_allowed")


class LanguageModelForm(forms.ModelForm):
    """Add or edit a model. The API key itself never passes through this form (only its variable's name)."""

    class Meta:
        model = LanguageModel
        fields = [
            "key",
            "name",
            "provider",
            "provider_model_id",
            "developer",
            "company",
            "open_weights",
            "knowledge_cutoff",
            "release_date",
            "input_cost_per_mtok",
            "output_cost_per_mtok",
            "base_url",
            "api_key_env",
            "request_options",
            "max_concurrency",
            "active",
            "uploaders",
        ]
        widgets = {
            "knowledge_cutoff": forms.DateInput(attrs={"type": "date"}),
            "release_date": forms.DateInput(attrs={"type": "date"}),
            "request_options": forms.Textarea(attrs={"rows": 3, "cols": 50}),
            "open_weights": forms.NullBooleanSelect(),
        }
        labels = {
            "api_key_env": "API key environment variable",
            "base_url": "Base URL",
            "input_cost_per_mtok": "USD per 1M input tokens",
            "output_cost_per_mtok": "USD per 1M output tokens",
            "uploaders": "Users granted upload rights",
        }
        help_texts = {
            "uploaders": "members who may upload predictions for this model (a published model stays locked)"
        }

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["key"].validators.append(validate_model_key)
        self.fields["api_key_env"].validators.append(validate_api_key_env)
        self.fields["request_options"].required = False
        # Maintainers upload for any unpublished model already; grants are for signed-up members.
        users = get_user_model()
        self.fields["uploaders"].queryset = users.objects.filter(is_active=True, is_staff=False).order_by(
            users.USERNAME_FIELD
        )

    def clean_base_url(self) -> str:
        """The URL, whose host (or, when empty, the chosen provider's default host) must be allowed; the same
        rule is applied again at call time (``llm.base_url_for``)."""
        url: str = self.cleaned_data.get("base_url", "")
        if url and not url.startswith(("http://", "https://")):
            raise ValidationError("The base URL must start with http:// or https://.")
        if url and ("@" in url.split("//", 1)[1].split("/", 1)[0]):
            raise ValidationError("Do not put credentials in the URL; name an environment variable instead.")
        # The provider field comes first in Meta.fields, so it is already cleaned (absent when invalid).
        effective = url or llm.PROVIDER_BASE_URLS.get(self.cleaned_data.get("provider", ""), "")
        refusal = llm.endpoint_refusal(effective) if effective else None
        if refusal:
            advice = "" if url else " Set a base URL on an allowed host (the provider's default is not)."
            raise ValidationError(refusal[0].upper() + refusal[1:] + "." + advice, code="host_not_allowed")
        return url

    def clean_request_options(self) -> dict:
        options = self.cleaned_data.get("request_options") or {}
        if not isinstance(options, dict):
            raise ValidationError('Request options must be a JSON object, e.g. {"temperature": 0}.')
        secrets = [k for k, v in options.items() if isinstance(v, str) and looks_like_api_key(v)]
        if secrets or any(k.lower() in ("api_key", "authorization") for k in options):
            raise ValidationError("Request options must not hold API keys.")
        return options

    def _post_clean(self) -> None:
        super()._post_clean()
        # A rejected api_key_env may be a pasted secret: never echo it back into the page.
        if "api_key_env" in self.errors:
            self.data = self.data.copy()
            self.data[self.add_prefix("api_key_env")] = ""


def _release_choices(
    help_text: str = "the benchmark release the predictions answer",
) -> forms.ModelChoiceField:
    return forms.ModelChoiceField(
        queryset=Release.objects.order_by("-is_default", "-created_at"),
        to_field_name="name",
        empty_label=None,
        help_text=help_text,
    )


def _template_field(help_text: str, *, required: bool = True) -> forms.ChoiceField:
    return forms.ChoiceField(
        choices=[(t, t) for t in TEMPLATES],
        required=required,
        help_text=help_text,
        # The default message repeats the submitted value, which may be of any size.
        error_messages={"invalid_choice": f"Choose one of {', '.join(TEMPLATES)}."},
    )


def _paper_field(help_text: str, *, required: bool = True) -> forms.ChoiceField:
    return forms.ChoiceField(
        choices=PAPER_CHOICES,
        required=required,
        widget=forms.RadioSelect,
        label="Paper",
        help_text=help_text,
        error_messages={"invalid_choice": "Choose with or without the paper."},
    )


def _preselect_release_defaults(form: forms.Form, release_name: str | None) -> None:
    """Preselect the release the unbound form shows and its template and paper setting: the one named,
    else the first runnable release (every task version has its files: the default release when it is
    runnable), else the first of the list."""
    queryset = form.fields["release"].queryset
    release = queryset.filter(name=release_name).first() if release_name else None
    release = release or releases_runnable().first() or queryset.first()
    defaults = release_run_defaults(release=release)
    form.initial.setdefault("release", release.name if release else None)
    form.initial.setdefault("template", defaults.template)
    form.initial.setdefault("with_paper", defaults.paper)
    form.release_defaults = defaults


class PredictionsUploadForm(forms.Form):
    """A predictions JSONL for a release, for an existing model or a new one named here.

    The form only parses the request; the file, its size and the new model's key and name are checked by
    ``evaluation.services.uploads.predictions_upload`` (whose errors the view puts on these fields).
    """

    model = forms.ModelChoiceField(
        queryset=LanguageModel.objects.order_by("name"),
        to_field_name="key",
        required=False,
        empty_label="— a new model (fill in below) —",
    )
    new_model_key = forms.CharField(required=False, max_length=100, label="New model key")
    new_model_name = forms.CharField(required=False, max_length=200, label="New model display name")
    new_model_developer = forms.CharField(required=False, max_length=100, label="Developer")
    release = forms.ModelChoiceField(queryset=Release.objects.none())
    # Not required, as in the API: a client that sends neither gets the release's defaults (the page
    # preselects them, so a browser always sends both).
    template = _template_field(
        "the prompt template the answers were made with; code is extracted from a raw 'response' with it",
        required=False,
    )
    with_paper = _paper_field(
        "whether the paper was in the prompts that produced these answers", required=False
    )
    file = forms.FileField(label="Predictions (JSONL)")
    #: a fresh key per page load: sending the same form twice (a retry after a lost answer) starts one run
    upload_key = forms.CharField(required=False, max_length=128, widget=forms.HiddenInput)

    #: the upload service's field names -> this form's
    SERVICE_FIELDS = {"model_key": "new_model_key", "model_name": "new_model_name", "idempotency_key": None}

    #: the preselected release's defaults (set on an unbound form)
    release_defaults: RunDefaults | None = None

    def __init__(self, *args: Any, release_name: str | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["release"] = _release_choices()
        if not self.is_bound:
            _preselect_release_defaults(self, release_name)
            self.initial["upload_key"] = uuid.uuid4().hex
        limits = upload_limits()
        self.fields["file"].help_text = (
            f'one JSON object per line: {{"task", "snippet", "completion_idx", "code" or "response"}}; '
            f"at most {human_size(limits.max_bytes)}, {limits.max_lines} lines and "
            f"{human_size(limits.max_code_bytes)} of code or response per line"
        )

    def clean(self) -> dict[str, Any]:
        data = super().clean()
        if data.get("model") is None and not data.get("new_model_key") and "new_model_key" not in self.errors:
            self.add_error("new_model_key", "Choose a model above or give the new model's key.")
        return data

    def clean_template(self) -> str | None:
        return self.cleaned_data.get("template") or None

    def clean_with_paper(self) -> bool | None:
        value = self.cleaned_data.get("with_paper")
        return None if not value else value == "with"

    def new_model(self) -> NewModel | None:
        """The model to create when none was chosen (its key and name are checked by the service)."""
        if self.cleaned_data.get("model") is not None:
            return None
        return NewModel(
            key=self.cleaned_data["new_model_key"],
            name=self.cleaned_data.get("new_model_name", ""),
            developer=self.cleaned_data.get("new_model_developer", ""),
        )


class RunStartForm(forms.Form):
    """What a generated run is of: a model the portal can call, a release, a template, the paper setting,
    samples per snippet and an optional temperature. The form only parses; ``generation.run_start`` checks
    the same rules again when the run is created."""

    model = forms.ModelChoiceField(
        queryset=LanguageModel.objects.filter(management=LanguageModel.Management.MAINTAINER).order_by(
            "name"
        ),
        to_field_name="key",
        empty_label=None,
        help_text="models managed by the maintainers (the portal calls their API)",
        error_messages={"invalid_choice": "Choose a model managed by the maintainers."},
    )
    release = forms.ModelChoiceField(queryset=Release.objects.none())
    template = _template_field("how the problem is shown to the model and its answer read")
    with_paper = _paper_field("whether the paper's text is in the prompt (the board's default is with)")
    n_completions = forms.IntegerField(
        min_value=1,
        max_value=MAX_SAMPLES,
        initial=1,
        label="Samples per snippet",
        help_text=f"completions per snippet (1-{MAX_SAMPLES}); pass@1 is averaged over them",
    )
    temperature = forms.FloatField(
        required=False,
        min_value=0.0,
        max_value=2.0,
        help_text="empty: the model's own request options decide",
    )

    release_defaults: RunDefaults | None = None

    def __init__(self, *args: Any, release_name: str | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["release"] = _release_choices("every testable snippet of this release is asked")
        if not self.is_bound:
            _preselect_release_defaults(self, release_name)

    def clean_model(self) -> LanguageModel:
        model: LanguageModel = self.cleaned_data["model"]
        refusal = generation_refusal(model=model)
        if refusal:
            raise ValidationError(refusal[0].upper() + refusal[1:] + ".", code="cannot_generate")
        return model

    def clean_with_paper(self) -> bool:
        return self.cleaned_data["with_paper"] == "with"


class RunFilterForm(forms.Form):
    """The run list's GET filters; an invalid value is dropped (the list shows every run for it)."""

    model = forms.ChoiceField(required=False)
    status = forms.ChoiceField(required=False, choices=[("", "any status"), *EvaluationRun.Status.choices])
    source = forms.ChoiceField(required=False, choices=[("", "any source"), *EvaluationRun.Source.choices])
    release = forms.ChoiceField(required=False)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["model"].choices = [
            ("", "any model"),
            *LanguageModel.objects.order_by("name").values_list("key", "name"),
        ]
        self.fields["release"].choices = [
            ("", "any release"),
            *((n, n) for n in Release.objects.order_by("-created_at").values_list("name", flat=True)),
        ]

    def values(self) -> dict[str, str]:
        """The valid filter values (every field present, "" for "any")."""
        self.is_valid()
        cleaned = getattr(self, "cleaned_data", {})
        return {name: cleaned.get(name, "") or "" for name in self.fields}
