from django.urls import path

from contributions import views

app_name = "contributions"
urlpatterns = [
    path("papers/", views.paper_list, name="paper_list"),
    path("contribute/", views.contribute, name="contribute"),
    path("review/", views.review_queue, name="review_queue"),
]
