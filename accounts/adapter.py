"""django-allauth hooks: usernames are compared and stored in Unicode NFKC form."""

from __future__ import annotations

import unicodedata

from allauth.account.adapter import DefaultAccountAdapter


class AccountAdapter(DefaultAccountAdapter):
    """Signup rules on top of allauth's defaults."""

    def clean_username(self, username: str, shallow: bool = False) -> str:
        """Return ``username`` in NFKC form after allauth's checks (validators, blacklist, taken).

        NFKC folds compatibility look-alikes (full-width ``ｂｏｂ``, ligatures, superscripts) to their
        plain form, so ``ｂｏｂ`` is refused as taken when ``bob`` exists instead of becoming a second
        account that reads the same on leaderboards and validation pages; Django's own
        ``AbstractBaseUser.normalize_username`` does the same for users made in the admin. Look-alikes
        from other scripts (Cyrillic ``а`` for Latin ``a``) are not folded by NFKC and stay allowed.

        Raises:
            django.core.exceptions.ValidationError: allauth's messages (e.g. username taken).
        """
        return super().clean_username(unicodedata.normalize("NFKC", username), shallow=shallow)
