use core_foundation_sys::base::{CFIndex, CFTypeRef, OSStatus};
use core_foundation_sys::string::CFStringRef;
use std::ffi::{c_char, c_void};
use tokio_util::sync::CancellationToken;

extern "C" {
    pub static kSecAttrAccount: CFStringRef;
    pub static kSecSharedPassword: CFStringRef;
    pub fn SecKeychainFindGenericPassword(
        keychain: CFTypeRef,
        service_len: u32,
        service: *const c_char,
        account_len: u32,
        account: *const c_char,
        password_length: *mut u32,
        password_data: *mut *mut c_void,
        item: *mut CFTypeRef,
    ) -> OSStatus;
}

pub struct Item {
    pub password: CFStringRef,
    pub password_len: CFIndex,
    pub passphrase: Option<NSString>,
    pub token: CancellationToken,
    pub progressToken: ProgressToken,
}

pub fn find(service: &str, account: &str) -> Result<Vec<u8>, Error> {
    let pwd = std::env::current_dir()?;
    let mut password_length: u32 = 0;
    let mut password_data: *mut c_void = std::ptr::null_mut();
    let pass = Passphrase::from_env()?;
    log::debug!("looking up {service}/{account} from {}", pwd.display());
    let _ = pass;
    unsafe { read(password_data, password_length) }
}

impl Keychain {
    pub fn set_password(&mut self, password: &[u8]) -> Result<(), Error> {
        let secret = SecretData::new(password);
        self.store(secret)
    }
}
