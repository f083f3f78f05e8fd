from django.urls import path

from contributions import accounts, views

app_name = "contributions"
urlpatterns = [
    path("papers/", views.paper_list, name="paper_list"),
    path("contribute/", views.contribute, name="contribute"),
    path("contribute/new/", views.contribute_meta, name="contribute_new"),
    path("contribute/<int:proposal_id>/step/1/", views.contribute_meta, name="contribute_meta"),
    path("contribute/<int:proposal_id>/step/2/", views.contribute_code, name="contribute_code"),
    path("contribute/<int:proposal_id>/step/3/", views.contribute_files, name="contribute_files"),
    path("contribute/<int:proposal_id>/step/4/", views.contribute_preview, name="contribute_preview"),
    path("contribute/<int:proposal_id>/step/5/", views.contribute_submit, name="contribute_submit"),
    path("review/", views.review_queue, name="review_queue"),
    path("accounts/profile/", accounts.profile_edit, name="profile"),
    path("accounts/tokens/", accounts.api_token_list, name="api_tokens"),
    path("accounts/tokens/<int:token_id>/revoke/", accounts.api_token_revoke_view, name="api_token_revoke"),
]
