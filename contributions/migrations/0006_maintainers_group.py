"""The "maintainers" group: its members review proposals, cut releases and run the evaluation's maintainer
pages (models, run cancel and re-run) without being staff (``is_staff`` is for the admin site).

Permissions are normally created after migrations (post_migrate), so the ones the group needs are created
here when missing, with the names Django gives them; post_migrate then finds them and adds nothing.
"""

from django.db import migrations

GROUP = "maintainers"
#: (app label, model, codename, name)
PERMISSIONS = (
    ("contributions", "proposal", "review_proposal", "Can review proposals"),
    ("contributions", "proposal", "cut_release", "Can cut releases"),
    ("contributions", "proposal", "view_proposal", "Can view proposal"),
    ("evaluation", "languagemodel", "add_languagemodel", "Can add language model"),
    ("evaluation", "languagemodel", "change_languagemodel", "Can change language model"),
    ("evaluation", "languagemodel", "view_languagemodel", "Can view language model"),
    ("evaluation", "evaluationrun", "change_evaluationrun", "Can change evaluation run"),
    ("evaluation", "evaluationrun", "view_evaluationrun", "Can view evaluation run"),
)


def create_group(apps, schema_editor):
    ContentType = apps.get_model("contenttypes", "ContentType")
    Permission = apps.get_model("auth", "Permission")
    Group = apps.get_model("auth", "Group")
    group, _ = Group.objects.get_or_create(name=GROUP)
    for app_label, model, codename, name in PERMISSIONS:
        content_type, _ = ContentType.objects.get_or_create(app_label=app_label, model=model)
        permission, _ = Permission.objects.get_or_create(
            content_type=content_type, codename=codename, defaults={"name": name}
        )
        group.permissions.add(permission)


def delete_group(apps, schema_editor):
    apps.get_model("auth", "Group").objects.filter(name=GROUP).delete()


class Migration(migrations.Migration):
    dependencies = [
        ("contributions", "0005_profile_api_token"),
        ("evaluation", "0003_language_model_ownership"),
        ("auth", "0012_alter_user_first_name_max_length"),
        ("contenttypes", "0002_remove_content_type_name"),
    ]

    operations = [migrations.RunPython(create_group, delete_group)]
