#ifndef PAM_HELPER_H
#define PAM_HELPER_H
#include <security/pam_appl.h>

#define PASSWORD_MAX 512
typedef struct password_s password_t;

int pam_get_authtok(pam_handle_t *pamh, int item, const char **authtok, const char *prompt);
int helper_read_password(char password[PASSWORD_MAX], const char *prompt);
password_t *password_new(const char *user);
void password_free(password_t *password);
static const char *password_prompt = "Password: ";
#endif
