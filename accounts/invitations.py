"""Invitations: an admin invites an email address; the person who reads that mailbox accepts.

The link is mailed to the address and never shown to the inviter. It carries a random token,
signed with the deployment's secret key and stamped with its time; the database keeps the
token's SHA-256 alone. A link works once, until it expires (MOMOR_INVITATION_TTL_SECONDS),
is revoked, or whoever sent it may no longer invite to that role. Following it, a new person
sets their password; someone who already has an account with that address signs in as it
and accepts. Accepting never sets the password of an existing account."""

from __future__ import annotations

import hashlib
import hmac
import secrets
from collections.abc import Callable
from datetime import timedelta
from typing import TYPE_CHECKING

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core import signing
from django.core.mail import send_mail
from django.db import IntegrityError, transaction
from django.utils import timezone

from accounts.models import ADMIN_ROLES, Invitation, Membership, Organization, Role
from accounts.services import AccountError, NotAllowed

if TYPE_CHECKING:
    from django.contrib.auth.models import User

_SALT = "momor.invitation"


class InvitationInvalid(AccountError):
    """The link is unknown, forged, used, revoked or expired."""


def _hash(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def _roles_that_invite(role: str) -> tuple[str, ...]:
    return (Role.OWNER,) if role == Role.OWNER else ADMIN_ROLES


def account_exists(email: str) -> bool:
    return get_user_model().objects.filter(email__iexact=email).exists()


# Sending -------------------------------------------------------------------------------


def invitation_send(
    *,
    organization: Organization,
    email: str,
    role: str,
    invited_by: User,
    link_for: Callable[[str], str],
) -> Invitation:
    """Invite `email` to `role` and mail them the link (`link_for(token)` makes its URL).
    An earlier pending invitation of the same address to this organization is revoked."""
    email = email.strip().lower()
    if role not in Role.values:
        raise AccountError(f"'{role}' is not a role")
    if not Membership.objects.filter(
        organization=organization, user=invited_by, role__in=_roles_that_invite(role)
    ).exists():
        raise NotAllowed(f"you may not invite people as {role}s")
    if Membership.objects.filter(organization=organization, user__email__iexact=email).exists():
        raise AccountError(f"{email} is already a member of {organization.slug}")
    token = secrets.token_urlsafe(32)
    with transaction.atomic():
        organization.invitations.pending().filter(email__iexact=email).update(
            revoked_at=timezone.now()
        )
        invitation = Invitation.objects.create(
            organization=organization,
            email=email,
            role=role,
            invited_by=invited_by,
            token_hash=_hash(token),
            expires_at=timezone.now() + timedelta(seconds=settings.MOMOR_INVITATION_TTL_SECONDS),
        )
        link = link_for(signing.dumps([invitation.pk, token], salt=_SALT))
        _mail(invitation, link)
    return invitation


def _mail(invitation: Invitation, link: str) -> None:
    org = invitation.organization
    hours = settings.MOMOR_INVITATION_TTL_SECONDS // 3600
    body = (
        f"You are invited to join {org.name} on Momor as {invitation.get_role_display()}.\n\n"
        f"Open this link to accept (it works once, for {hours} hours):\n\n{link}\n\n"
        "If you have a Momor account with this address, you will sign in to it to accept; "
        "otherwise you will choose a password.\nIf you did not expect this, ignore it.\n"
    )
    try:
        send_mail(f"Join {org.name} on Momor", body, None, [invitation.email])
    except OSError:  # smtplib's errors are OSErrors too
        raise AccountError("the invitation mail could not be sent; try again later") from None


def invitation_revoke(*, invitation: Invitation) -> None:
    if invitation.is_pending():
        invitation.revoked_at = timezone.now()
        invitation.save(update_fields=["revoked_at"])


# Following the link --------------------------------------------------------------------


def invitation_by_token(text: str) -> Invitation:
    """The pending invitation a link names, or InvitationInvalid."""
    max_age = settings.MOMOR_INVITATION_TTL_SECONDS
    try:
        pk, token = signing.loads(text, salt=_SALT, max_age=max_age)
    except (signing.BadSignature, TypeError, ValueError):
        raise InvitationInvalid("this invitation link is not valid") from None
    invitation = Invitation.objects.select_related("organization").filter(pk=pk).first()
    if invitation is None or not hmac.compare_digest(invitation.token_hash, _hash(str(token))):
        raise InvitationInvalid("this invitation link is not valid")
    _check_live(invitation)
    return invitation


def _check_live(invitation: Invitation) -> None:
    if not invitation.is_pending():
        raise InvitationInvalid("this invitation was used, revoked or has expired")
    if not _sender_may_send(invitation):
        raise InvitationInvalid("whoever sent this invitation may no longer send it")


def _sender_may_send(invitation: Invitation) -> bool:
    if invitation.invited_by_id is None:
        return False
    return Membership.objects.filter(
        organization_id=invitation.organization_id,
        user_id=invitation.invited_by_id,
        role__in=_roles_that_invite(invitation.role),
    ).exists()


def _locked(invitation: Invitation) -> Invitation:
    """The invitation's row, locked for the rest of the transaction and checked again."""
    row = Invitation.objects.select_for_update().get(pk=invitation.pk)
    _check_live(row)
    return row


def _accept(invitation: Invitation, user: User) -> Membership:
    membership, _ = Membership.objects.get_or_create(
        user=user, organization_id=invitation.organization_id, defaults={"role": invitation.role}
    )
    invitation.accepted_at, invitation.accepted_by = timezone.now(), user
    invitation.save(update_fields=["accepted_at", "accepted_by"])
    return membership


def invitation_accept_new(*, invitation: Invitation, password: str) -> User:
    """A new person accepts: their account is made with this password (username: the
    address). Refused when an account with the address exists: its owner signs in instead."""
    users = get_user_model().objects
    try:
        with transaction.atomic():
            row = _locked(invitation)
            if account_exists(row.email):
                raise NotAllowed("an account with this address exists: sign in to accept")
            user = users.create_user(username=row.email, email=row.email, password=password)
            _accept(row, user)
    except IntegrityError:
        raise NotAllowed("an account with this address exists: sign in to accept") from None
    return user


def invitation_accept(*, invitation: Invitation, user: User) -> Membership:
    """A signed-in person accepts, as the account the invitation was sent to."""
    if user.email.strip().lower() != invitation.email:
        raise NotAllowed("this invitation was sent to another address")
    with transaction.atomic():
        return _accept(_locked(invitation), user)
