from django.urls import path

from contributions import accounts, review_views, views

app_name = "contributions"
urlpatterns = [
    path("papers/", views.paper_list, name="paper_list"),
    path("releases/", views.release_list, name="release_list"),
    path("releases/new/", views.release_cut_view, name="release_cut"),
    path("releases/<slug:name>/default/", views.release_default_view, name="release_default"),
    path("contribute/", views.contribute, name="contribute"),
    path("contribute/new/", views.contribute_meta, name="contribute_new"),
    path("contribute/<int:proposal_id>/step/1/", views.contribute_meta, name="contribute_meta"),
    path("contribute/<int:proposal_id>/step/2/", views.contribute_code, name="contribute_code"),
    path("contribute/<int:proposal_id>/step/3/", views.contribute_files, name="contribute_files"),
    path("contribute/<int:proposal_id>/step/4/", views.contribute_preview, name="contribute_preview"),
    path("contribute/<int:proposal_id>/step/5/", views.contribute_submit, name="contribute_submit"),
    path("review/", review_views.review_queue, name="review_queue"),
    path("contribute/<int:proposal_id>/", review_views.proposal_detail, name="proposal_detail"),
    path("contribute/<int:proposal_id>/comment/", review_views.proposal_comment, name="proposal_comment"),
    path("contribute/<int:proposal_id>/review/", review_views.proposal_review_submit, name="proposal_review"),
    path(
        "contribute/<int:proposal_id>/withdraw/",
        review_views.proposal_withdraw_view,
        name="proposal_withdraw",
    ),
    path("notifications/", review_views.notification_list, name="notifications"),
    path("notifications/read/", review_views.notifications_read, name="notifications_read"),
    path("accounts/profile/", accounts.profile_edit, name="profile"),
    path("accounts/tokens/", accounts.api_token_list, name="api_tokens"),
    path("accounts/tokens/<int:token_id>/revoke/", accounts.api_token_revoke_view, name="api_token_revoke"),
]
