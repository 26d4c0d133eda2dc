"""Forms of the task pages: the qualification quiz."""

from __future__ import annotations

from django import forms

from .models import Quiz


class QuizForm(forms.Form):
    """One required radio group per question of ``quiz``, named ``q<question id>``; the choices are the
    question's, in its order. The answers are never part of the form (they stay on the server)."""

    def __init__(self, quiz: Quiz, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.questions = list(quiz.questions.all())
        for question in self.questions:
            self.fields[f"q{question.pk}"] = forms.ChoiceField(
                label=question.text,
                choices=[(c, c) for c in question.choices],
                widget=forms.RadioSelect,
                error_messages={
                    "required": "Choose an answer.",
                    "invalid_choice": "Choose one of the answers.",
                },
            )

    def answers(self) -> dict[str, str]:
        """Question id (as text) → the chosen answer, after ``is_valid``."""
        return {str(q.pk): self.cleaned_data[f"q{q.pk}"] for q in self.questions}
