from django.urls import path

from evaluation import views

app_name = "evaluation"
urlpatterns = [
    path("", views.run_list, name="run_list"),
    path("upload/", views.run_upload, name="run_upload"),
    path("new/", views.run_start_view, name="run_start"),
    path("<int:run_id>/", views.run_detail, name="run_detail"),
    path("<int:run_id>/cancel/", views.run_cancel_view, name="run_cancel"),
    path("<int:run_id>/rerun/", views.run_rerun_view, name="run_rerun"),
    path("<int:run_id>/rejudge/", views.run_rejudge_view, name="run_rejudge"),
    path("models/", views.model_list, name="model_list"),
    path("models/add/", views.model_add, name="model_add"),
    path("models/<int:model_id>/edit/", views.model_edit, name="model_edit"),
    path("models/<int:model_id>/test/", views.model_test, name="model_test"),
]
