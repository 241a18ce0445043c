"""Single sign-on with OpenID Connect (django-allauth's `openid_connect` provider): the
identity providers the operator configures, the e-mail domains organizations verify so that
people signing in from them join with a chosen role, and the organizations that require it of
their members (docs/security.md, "Single sign-on")."""
