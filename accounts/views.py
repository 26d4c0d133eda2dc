"""The signed-in user's profile page: who they are and their API token."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.shortcuts import redirect, render
from rest_framework.authtoken.models import Token

from . import services
from .forms import DisplayNameForm


@login_required
def me(request):
    """Show the profile and the API token; POST ``action=create`` makes one, ``action=regenerate`` replaces it;
    ``action=display_name`` saves the display name form (``forms.DisplayNameForm``; errors shown on the page).

    The token is only ever shown to its owner, on this page (POST/redirect/GET after a change).
    """
    name_form = DisplayNameForm(instance=request.user)
    if request.method == "POST":
        action = request.POST.get("action")
        if action == "display_name":
            name_form = DisplayNameForm(request.POST, instance=request.user)
            if name_form.is_valid():
                name_form.save()
                messages.success(request, "Display name saved.")
                return redirect("accounts:me")
            token = Token.objects.filter(user=request.user).first()
            return render(request, "accounts/me.html", {"token": token, "name_form": name_form}, status=400)
        if action in ("create", "regenerate"):
            services.api_token_for(request.user, regenerate=action == "regenerate")
            messages.success(
                request,
                "A new API token was made; the old one no longer works."
                if action == "regenerate"
                else "API token created.",
            )
        else:
            messages.error(request, "Unknown action.")
        return redirect("accounts:me")
    token = Token.objects.filter(user=request.user).first()
    return render(request, "accounts/me.html", {"token": token, "name_form": name_form})
