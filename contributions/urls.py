from django.urls import path

from contributions.views import accounts, catalogue, contribute, marking, review

app_name = "contributions"
urlpatterns = [
    path("releases/", catalogue.release_list, name="release_list"),
    path("releases/new/", catalogue.release_cut_view, name="release_cut"),
    path("releases/<slug:name>/", catalogue.release_detail, name="release_detail"),
    path("releases/<slug:name>/download/", catalogue.release_download, name="release_download"),
    path("releases/<slug:name>/default/", catalogue.release_default_view, name="release_default"),
    path("contribute/", contribute.contribute, name="contribute"),
    path("contribute/new/", contribute.contribute_meta, name="contribute_new"),
    path("contribute/<int:proposal_id>/step/1/", contribute.contribute_meta, name="contribute_meta"),
    path("contribute/<int:proposal_id>/step/2/", contribute.contribute_code, name="contribute_code"),
    path("contribute/<int:proposal_id>/step/3/", contribute.contribute_files, name="contribute_files"),
    path("contribute/<int:proposal_id>/step/4/", contribute.contribute_preview, name="contribute_preview"),
    path("contribute/<int:proposal_id>/step/5/", contribute.contribute_submit, name="contribute_submit"),
    path("contribute/<int:proposal_id>/snippets/", marking.proposal_marks, name="proposal_marks"),
    path("review/", review.review_queue, name="review_queue"),
    path("contribute/<int:proposal_id>/", review.proposal_detail, name="proposal_detail"),
    path("contribute/<int:proposal_id>/comment/", review.proposal_comment, name="proposal_comment"),
    path("contribute/<int:proposal_id>/review/", review.proposal_review_submit, name="proposal_review"),
    path(
        "contribute/<int:proposal_id>/withdraw/",
        review.proposal_withdraw_view,
        name="proposal_withdraw",
    ),
    path("notifications/", review.notification_list, name="notifications"),
    path("notifications/read/", review.notifications_read, name="notifications_read"),
    path("accounts/profile/", accounts.profile_edit, name="profile"),
    path("accounts/tokens/", accounts.api_token_list, name="api_tokens"),
    path("accounts/tokens/<int:token_id>/revoke/", accounts.api_token_revoke_view, name="api_token_revoke"),
]
