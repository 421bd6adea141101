from oauth2_provider.oauth2_validators import OAuth2Validator


class GroupsValidator(OAuth2Validator):
    """Puts the user's e-mail address and Django groups (as `groups`) in the ID token and the
    userinfo answer, whatever the scopes."""

    oidc_claim_scope = None

    def get_additional_claims(self, request):
        user = request.user
        return {"email": user.email, "email_verified": True, "preferred_username": user.username,
                "groups": sorted(user.groups.values_list("name", flat=True))}
