"""The arena's forms: they only read what was posted; the rules are the services' (``services.py``)."""

from __future__ import annotations

from django import forms

from ..models import Battle


class PromptForm(forms.Form):
    """A prompt the person writes, sent to both models as it is (not stripped: spaces and newlines are
    part of a prompt)."""

    prompt = forms.CharField(strip=False, required=False, widget=forms.Textarea)
    client_token = forms.UUIDField(required=False)


class RoundPromptForm(forms.Form):
    """ "Use a prompt from round N": the server picks a settled conversation of that round."""

    round = forms.IntegerField(min_value=1, max_value=2**31 - 1)
    client_token = forms.UUIDField(required=False)


class VoteForm(forms.Form):
    """The vote on a battle: A is better, B is better, Tie, Both are bad."""

    vote = forms.ChoiceField(choices=Battle.Vote.choices)
    #: The next message, to vote and continue the conversation (a vote per turn); empty: vote and finish.
    follow_up = forms.CharField(strip=False, required=False, widget=forms.Textarea)
