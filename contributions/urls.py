from django.urls import path

from contributions import accounts, views

app_name = "contributions"
urlpatterns = [
    path("papers/", views.paper_list, name="paper_list"),
    path("contribute/", views.contribute, name="contribute"),
    path("review/", views.review_queue, name="review_queue"),
    path("accounts/profile/", accounts.profile_edit, name="profile"),
    path("accounts/tokens/", accounts.api_token_list, name="api_tokens"),
    path("accounts/tokens/<int:token_id>/revoke/", accounts.api_token_revoke_view, name="api_token_revoke"),
]
